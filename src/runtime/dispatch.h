#pragma once
// The single dispatch point of the engine: every operator of the forward pass is one call of
// a method below, and every method ends in Dispatcher::run(compute), which appends the node's
// graph::OpRecord (when tracing) and runs the computation through duet::kernels (or the
// WeightSource for weight matmuls). The record is not computed here: the engine lowers the
// node it runs with graph::lower (graph/lowering.h), the function the trace-only planner
// lowers every node with, and hands it over with set_record() before the call; the simulator
// consumes exactly these records, so the op list, shapes, bytes and FLOPs exist once
// (field semantics in graph/op_record.h). The one fact the dispatcher adds is the weight
// operand as the weight source holds it (WeightSource::info: a PIM layout may hold f32
// matrices as f16), which a MATMUL record reports in weight_dtype and weight_bytes.
//
// A q/k/v bias is the matmul's epilogue, not a separate op; its 4n bytes and mn adds
// (< 0.1 %) are not in the record.
//
// Thread safety: one Dispatcher per engine, used from the engine's thread.
#include <cstdint>
#include <functional>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "kernels/kernels.h"
#include "graph/op_record.h"

namespace duet::runtime {

class WeightSource;

class Dispatcher {
public:
    Dispatcher(ThreadPool& pool, const WeightSource* weights) : pool_(pool), weights_(weights) {}

    void set_weight_source(const WeightSource* w) { weights_ = w; }
    // attention() runs the scalar reference kernel (kernels/ref) instead of the dispatched one.
    void set_reference_attention(bool on) { reference_attention_ = on; }
    const WeightSource& weight_source() const { return *weights_; }
    // Records go to `trace` (appended) while it is non-null; nullptr turns tracing off.
    void set_trace(graph::OpTrace* trace) { trace_ = trace; }
    graph::OpTrace* trace() const { return trace_; }
    // Optional observer called with every record (tracing or not), e.g. a live timing model.
    void set_observer(std::function<void(const graph::OpRecord&)> obs) { observer_ = std::move(obs); }
    // Optional timer called with every record and the wall time its operator took, ns (the host
    // profile's probe, workload/host_probe.h); empty: operators are not timed.
    void set_timer(std::function<void(const graph::OpRecord&, int64_t ns)> t) { timer_ = std::move(t); }

    // The record of the node the next call executes (graph::lower of it); matmul() takes the
    // weight's layer from it.
    void set_record(const graph::OpRecord& rec) { rec_ = rec; }

    // --- operators ---
    // out[i][:] = row tokens[i] of table (n_vocab rows of n elements, `type`, row stride bytes).
    void embed(const int32_t* tokens, int64_t m, const void* table, DType type, size_t row_stride_bytes, int64_t n,
               float* out);
    // y[i] = rmsnorm(x[i]) * w, rows of n (strides = n). y may alias x.
    void rmsnorm(const float* x, const float* w, float* y, int64_t m, int64_t n, float eps);
    // y[m][n] = x[m][k] · W(role, layer)ᵀ (+ bias[n] when bias != nullptr), row strides in floats.
    void matmul(graph::WeightRole role, const float* x, int64_t x_stride, int64_t m, float* y, int64_t y_stride,
                const float* bias = nullptr);
    // RMSNorm fused into the matmul's input quantisation (graph/fuse_rmsnorm_matmul.h):
    // y = rmsnorm(x_r) * norm_w · W(role, layer)ᵀ (+ bias) for r = rows[i] (nullptr: r = i), i < m,
    // x rows of k = W's input features, x_stride apart. One kernel normalises each row into the
    // weight source's activation format (kernels::rmsnorm_quantize: quantised blocks, no f32
    // normed row) and the matmul reads them (WeightSource::matmul_quantized): bit-identical to
    // rmsnorm() then matmul(). One MATMUL record with rmsnorm_fused (graph/op_record.h).
    void rmsnorm_matmul(graph::WeightRole role, const float* x, int64_t x_stride, const int64_t* rows, int64_t m,
                        const float* norm_w, float eps, float* y, int64_t y_stride, const float* bias = nullptr);
    // y[i][j] += x[i][j] over m×n (residual).
    void add(float* y, const float* x, int64_t m, int64_t n);
    // Rotates q (m rows of n_head heads, row stride q_stride) and k (n_head_kv heads, row stride
    // k_stride) at positions pos[i] into q_out, k_out (contiguous rows; may equal q, k, which
    // then must be contiguous too: in place).
    struct RopeParams {
        int64_t n_head, n_head_kv, head_dim, n_rot;
        float freq_base, freq_scale;
        const float* freq_factors;  // n_rot / 2 or null
        kernels::RopeOrder order;
    };
    void rope(const float* q, int64_t q_stride, float* q_out, const float* k, int64_t k_stride, float* k_out, int64_t m,
              const int64_t* pos, const RopeParams& p);
    // out[i][j] = silu(gate[i][j]) * up[i][j] over m×n (row strides in floats; out contiguous, may alias gate).
    void swiglu(const float* gate, int64_t gate_stride, const float* up, int64_t up_stride, float* out, int64_t m,
                int64_t n);
    // ROPE + KV_WRITE in one pass (graph/fuse_rope_kv.h): rotates q into q_out as rope() does,
    // and for token i rotates a copy of k's row i and stores it with v's row i through
    // store(src, dst, n_embd_kv, kv_type) at k_dst[i], v_dst[i] (cache rows) — the same kernels on
    // the same values as rope() then kv_write(), so the cache and q_out are bit-identical.
    using StoreRow = void (*)(const float* src, uint8_t* dst, int64_t n, DType type);
    void rope_kv_write(const float* q, int64_t q_stride, float* q_out, const float* k, int64_t k_stride,
                       const float* v, int64_t v_stride, int64_t m, const int64_t* pos, const RopeParams& p,
                       DType kv_type, uint8_t* const* k_dst, uint8_t* const* v_dst, StoreRow store);
    // A KV write (K and V rows of the new tokens into the cache): runs `write`.
    void kv_write(const std::function<void()>& write);
    // A Mixture-of-Experts operator (MOE_ROUTE, MOE_MATMUL, MOE_COMBINE; runtime/engine_moe.cpp
    // computes it with kernels::matmul on each expert's matrices): runs `compute`.
    void moe(const std::function<void()>& compute);
    // A latent-attention operator (ROPE of its query and shared key, HEAD_MATMUL, MLA_ATTENTION;
    // runtime/engine_mla.cpp computes it with kernels::rope, matmul and mla_attention): runs `compute`.
    void mla(const std::function<void()>& compute);
    // Causal attention of every sequence of the batch over its own KV blocks (kernels::attention).
    struct AttentionSeq {
        const float* q;  // [n_q][n_head][head_dim]
        int64_t n_q;
        int64_t pos0;
        kernels::KvView kv;
        float* out;  // [n_q][n_head][head_dim]
    };
    void attention(const std::vector<AttentionSeq>& seqs, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                   float scale);
    // Marks the sampling of one token per sequence (the caller samples).
    void output();

private:
    template <typename F>
    void run(F&& compute);
    // The layer of the record's weight (LM_HEAD: -1).
    int32_t weight_layer(graph::WeightRole role) const { return role == graph::WeightRole::LM_HEAD ? -1 : rec_.layer; }

    ThreadPool& pool_;
    const WeightSource* weights_;
    graph::OpTrace* trace_ = nullptr;
    std::function<void(const graph::OpRecord&)> observer_;
    std::function<void(const graph::OpRecord&, int64_t)> timer_;
    bool reference_attention_ = false;
    graph::OpRecord rec_;
    std::vector<uint8_t> xq_;  // rmsnorm_matmul's quantised activations, grown to the largest
};

}  // namespace duet::runtime
