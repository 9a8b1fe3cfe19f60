#pragma once
// The single dispatch point of the engine: every operator of the forward pass is one call of
// a method below, and every method ends in Dispatcher::run(record, compute), which appends
// the sim::OpRecord (when tracing) and runs the computation through duet::kernels (or the
// WeightSource for weight matmuls). The simulator (issue 4) consumes exactly these records,
// so the op list, shapes, bytes and FLOPs exist once.
//
// Closed forms of the records (activations are f32 on the host, 4 bytes per element):
//   MATMUL     m×k · (n×k)ᵀ: flops 2mnk; weight_bytes = whole matrix; in 4mk; out 4mn
//   RMSNORM    m rows of n: flops 4mn; weight_bytes 4n; in 4mn; out 4mn
//   ADD        m×n (+ m×n, or a bias row broadcast): flops mn; weight_bytes 4n for a bias
//   ROPE       m tokens × n_head heads × n_rot dims: flops 3·m·n_head·n_rot; in = out = 4·m·n_head·head_dim
//   SWIGLU     m×n: flops 5mn (silu ≈ 4, product 1); in 8mn; out 4mn
//   EMBED      m rows of n from the table: weight_bytes m·row_bytes; out 4mn
//   KV_WRITE   m tokens: in 8·m·n_embd_kv; out 2·m·row_bytes(kv_type, n_embd_kv)
//   ATTENTION  one sequence, m = n_q queries at pos0.., n = pos0 + n_q context, k = head_dim:
//              S = Σ_i (pos0 + i + 1) = n_q·pos0 + n_q(n_q+1)/2 query-key pairs;
//              flops 4·n_head·head_dim·S; weight_bytes (KV read) 2·n·row_bytes(kv_type, n_embd_kv);
//              in 4·m·n_head·head_dim; out the same
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
    void set_layer(int32_t layer) { layer_ = layer; }

    // --- operators ---
    // out[i][:] = row tokens[i] of table (n_vocab rows of n elements, `type`, row stride bytes).
    void embed(const int32_t* tokens, int64_t m, const void* table, DType type, size_t row_stride_bytes, int64_t n,
               float* out);
    // y[i] = rmsnorm(x[i]) * w, rows of n (strides = n). y may alias x.
    void rmsnorm(const float* x, const float* w, float* y, int64_t m, int64_t n, float eps);
    // y[m][n] = x[m][k] · W(role, layer)ᵀ with row strides k and n.
    void matmul(sim::WeightRole role, const float* x, int64_t m, float* y);
    // y[i][j] += x[i][j] (x != nullptr) or y[i][j] += bias[j] (bias != nullptr, recorded with `role`).
    void add(float* y, const float* x, int64_t m, int64_t n);
    void add_bias(float* y, const float* bias, int64_t m, int64_t n, sim::WeightRole role);
    // Rotates m token rows (row stride n_head * head_dim) at positions pos[i].
    void rope(float* x, int64_t m, const int64_t* pos, int64_t n_head, int64_t head_dim, int64_t n_rot,
              float freq_base, float freq_scale, const float* freq_factors, kernels::RopeOrder order);
    // out[i] = silu(gate[i]) * up[i] over m×n (out may alias gate).
    void swiglu(const float* gate, const float* up, float* out, int64_t m, int64_t n);
    // Records a KV write of m tokens (n_embd_kv wide each, stored in kv_type) and runs `write`.
    void kv_write(int64_t m, int64_t n_embd_kv, DType kv_type, const std::function<void()>& write);
    // Causal attention of one sequence (see kernels::attention).
    void attention(const float* q, int64_t n_q, int64_t pos0, int64_t n_head, int64_t n_head_kv, int64_t head_dim,
                   const kernels::KvView& kv, float scale, float* out);

private:
    template <typename F>
    void run(sim::OpRecord& rec, F&& compute);

    ThreadPool& pool_;
    const WeightSource* weights_;
    sim::OpTrace* trace_ = nullptr;
    std::function<void(const sim::OpRecord&)> observer_;
    sim::Phase phase_ = sim::Phase::PREFILL;
    int32_t layer_ = -1;
    int32_t n_seq_ = 1;
};

}  // namespace duet::runtime
