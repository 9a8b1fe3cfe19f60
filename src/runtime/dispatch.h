#pragma once
// The single dispatch point of the engine: every operator of the forward pass is one call of
// a method below, and every method ends in Dispatcher::run(record, compute), which appends
// the sim::OpRecord (when tracing) and runs the computation through duet::kernels (or the
// WeightSource for weight matmuls). The simulator (issue 4) consumes exactly these records,
// so the op list, shapes, bytes and FLOPs exist once.
//
// The records follow the field semantics written in sim/op_trace.h; the engine calls one method
// per node of the model's graph (graph/graph.h), in node order, after set_node(), so the
// trace-only planner, which lowers the same graph, emits the same list. Closed forms
// (activations f32 on the host, 4 bytes per element):
//   MATMUL     m×k · (n×k)ᵀ: flops 2mnk; weight_bytes = whole matrix; in 4mk; out 4mn. A bias
//              (qwen2 q/k/v) is the matmul's epilogue, not a separate op; its 4n bytes and mn
//              adds (< 0.1 %) are not counted, so the records equal the planner's. With the
//              RMSNorm fused (rmsnorm_matmul): weight_bytes + 4k, flops + 4mk, rmsnorm_fused.
//   RMSNORM    m rows of n: flops 4mn; weight_bytes 4n; in 4mn; out 4mn
//   ADD        m×n residual: flops mn; in 8mn; out 4mn
//   ROPE       m tokens, n = (n_head + n_head_kv)·head_dim: flops 3mn; in = out = 4mn
//   SWIGLU     m×n: flops 4mn; in 8mn; out 4mn
//   EMBED      m rows of n from the table: weight_bytes m·row_bytes; in 4m (ids); out 4mn
//   KV_WRITE   m tokens, n = 2·n_embd_kv: in 4mn; out m·n·sizeof(KV element)
//   ATTENTION  m = all new tokens, n = context after this forward (the longest one in a ragged
//              batch), k = head_dim; per sequence S = n_q·pos0 + n_q(n_q+1)/2 query-key pairs;
//              flops 4·n_head·head_dim·ΣS; weight_bytes (KV read) Σ 2·ctx·n_embd_kv·sizeof(KV
//              element); in = out = 4·m·n_head·head_dim
//   OUTPUT     marks sampling of one token per sequence (done by the caller): m = n_seq,
//              n = n_vocab; in 4mn; out 4m; flops mn
// n_seq is the number of sequences of the batch on every record; phase is PREFILL when any
// sequence of the batch brings more than one new token, else DECODE.
//
// Thread safety: one Dispatcher per engine, used from the engine's thread.
#include <cstdint>
#include <functional>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "kernels/kernels.h"
#include "sim/op_trace.h"

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
    void set_trace(sim::OpTrace* trace) { trace_ = trace; }
    sim::OpTrace* trace() const { return trace_; }
    // Optional observer called with every record (tracing or not), e.g. a live timing model.
    void set_observer(std::function<void(const sim::OpRecord&)> obs) { observer_ = std::move(obs); }

    // Context of the following ops: phase, layer (-1 outside blocks), sequences served.
    void set_context(sim::Phase phase, int32_t layer, int32_t n_seq) {
        phase_ = phase;
        layer_ = layer;
        n_seq_ = n_seq;
    }
    // The graph node the next call executes: its layer and whether it is a sibling of the
    // node before it (OpRecord::sibling_of_prev).
    void set_node(int32_t layer, bool sibling_of_prev) {
        layer_ = layer;
        sibling_ = sibling_of_prev;
    }

    // --- operators ---
    // out[i][:] = row tokens[i] of table (n_vocab rows of n elements, `type`, row stride bytes).
    void embed(const int32_t* tokens, int64_t m, const void* table, DType type, size_t row_stride_bytes, int64_t n,
               float* out);
    // y[i] = rmsnorm(x[i]) * w, rows of n (strides = n). y may alias x.
    void rmsnorm(const float* x, const float* w, float* y, int64_t m, int64_t n, float eps);
    // y[m][n] = x[m][k] · W(role, layer)ᵀ (+ bias[n] when bias != nullptr), row strides in floats.
    void matmul(sim::WeightRole role, const float* x, int64_t x_stride, int64_t m, float* y, int64_t y_stride,
                const float* bias = nullptr);
    // RMSNorm fused into the matmul's input quantisation (graph/fuse_rmsnorm_matmul.h):
    // y = rmsnorm(x_r) * norm_w · W(role, layer)ᵀ (+ bias) for r = rows[i] (nullptr: r = i), i < m,
    // x rows of k = W's input features, x_stride apart. One kernel normalises each row into the
    // weight source's activation format (kernels::rmsnorm_quantize: quantised blocks, no f32
    // normed row) and the matmul reads them (WeightSource::matmul_quantized): bit-identical to
    // rmsnorm() then matmul(). One MATMUL record with rmsnorm_fused (sim/op_trace.h).
    void rmsnorm_matmul(sim::WeightRole role, const float* x, int64_t x_stride, const int64_t* rows, int64_t m,
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
    // Records a KV write of m tokens (K and V, n_embd_kv wide each, stored in kv_type) and runs `write`.
    void kv_write(int64_t m, int64_t n_embd_kv, DType kv_type, const std::function<void()>& write);
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
    // Marks the sampling of one token for each of n_seq sequences (the caller samples).
    void output(int64_t n_seq, int64_t n_vocab);

private:
    template <typename F>
    void run(sim::OpRecord& rec, F&& compute);

    ThreadPool& pool_;
    const WeightSource* weights_;
    sim::OpTrace* trace_ = nullptr;
    std::function<void(const sim::OpRecord&)> observer_;
    bool reference_attention_ = false;
    sim::Phase phase_ = sim::Phase::PREFILL;
    int32_t layer_ = -1;
    int32_t n_seq_ = 1;
    bool sibling_ = false;
    std::vector<uint8_t> xq_;  // rmsnorm_matmul's quantised activations, grown to the largest
};

}  // namespace duet::runtime
