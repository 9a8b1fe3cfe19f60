#pragma once
// The interface placement uses to ask a modelled device about an operator (ggml backends'
// supports_op, MNN's onMeasure): devices answer, placement does not hard-code them.
// hw/ never includes model or runtime code: operators arrive as plain shapes.
#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace duet::hw {

enum class OpClass {
    GEMM,         // y[m][n] = x[m][k] · W[n][k]^T with m > 1 (prefill, batched decode)
    GEMV,         // the same with m == 1
    ATTENTION,    // m query tokens against n context tokens, k = head_dim, heads in n_head/n_head_kv
    ELEMENTWISE,  // norms, RoPE, activations, residual adds: bytes_in/bytes_out, flops
    SOFTMAX,
    COPY,         // KV cache writes, layout conversions
};

// Which operator an ELEMENTWISE or COPY shape is, for a device that runs some of them and not
// others (a PIM preset with CENT's mapping, hw/pim/pim_cent_mapping.h); other devices price the
// class from bytes and FLOPs and ignore it. Shapes: RMSNORM m rows of n; ROPE q and k of m rows,
// n = (n_head + n_head_kv) * k; ROPE_KV_WRITE the same, the rotated k and v stored; KV_WRITE m
// rows of n = 2 * n_head_kv * head_dim; SWIGLU m rows of n; ADD m rows of n; SAMPLE the choice of
// one token for each of m sequences from logits of n (a host CPU preset's sampling_ns each).
enum class ElemOp { NONE, RMSNORM, ROPE, ROPE_KV_WRITE, KV_WRITE, SWIGLU, ADD, SAMPLE };

struct OpShape {
    OpClass cls = OpClass::ELEMENTWISE;
    ElemOp elem = ElemOp::NONE;
    int64_t m = 0, n = 0, k = 0;
    int64_t n_head = 0, n_head_kv = 0;
    int context_ranks = 1;            // ATTENTION: devices sharing the context positions (q.K^T over 1 of them)
    DType weight_dtype = DType::F16;  // matrix operand (weights or KV cache)
    DType act_dtype = DType::F16;     // activations as the device holds them
    uint64_t weight_bytes = 0;        // bytes of the weight / KV operand read
    uint64_t in_bytes = 0;            // activation bytes read
    uint64_t out_bytes = 0;           // bytes written
    double flops = 0;                 // 2 per multiply-add
};

struct Cost {
    double t_ns = 0;         // modelled time of the operator on the device, launch included
    double t_launch_ns = 0;  // part of t_ns spent in launch/dispatch overhead
    double bytes_moved = 0;  // bytes crossing the device's memory interface
    double energy_pj = 0;
    const char* bound = "none";  // "compute", "memory", "launch", "unsupported"
};

class Device {
public:
    virtual ~Device() = default;
    virtual std::string name() const = 0;
    virtual bool supports(const OpShape& op) const = 0;
    virtual Cost estimate(const OpShape& op) const = 0;  // only called when supports(op)
};

}  // namespace duet::hw
