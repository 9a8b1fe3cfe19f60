#pragma once
// How the engine's weight matmuls reach the weights. Every weight matmul of the forward pass
// is one call of WeightSource::matmul(role, layer, ...), so another weight layout (issue 4:
// the PIM layout read through its block index) plugs in by implementing this interface and
// handing it to Engine::set_weight_source — the forward code does not change.
//
// PlainWeightSource reads the tensors of model::Weights in place (the GGUF mapping) with
// kernels::matmul.
//
// Thread safety: implementations are immutable after construction; matmul is called from
// the engine's thread, which passes its pool.
#include <cstdint>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "model/weights.h"
#include "sim/op_trace.h"

namespace duet::runtime {

// The logical shape of one weight matrix: n rows (output features) of k elements.
struct WeightInfo {
    int64_t n = 0;
    int64_t k = 0;
    DType dtype = DType::F32;
    uint64_t bytes = 0;  // bytes a full pass over the matrix reads
};

class WeightSource {
public:
    virtual ~WeightSource() = default;
    // layer is -1 for LM_HEAD.
    virtual WeightInfo info(sim::WeightRole role, int32_t layer) const = 0;
    // y[i][j] = sum_l x[i][l] * W[j][l], i < m, j < n (strides in floats).
    virtual void matmul(sim::WeightRole role, int32_t layer, const float* x, int64_t m, int64_t x_stride, float* y,
                        int64_t y_stride, ThreadPool& pool) const = 0;
};

class PlainWeightSource : public WeightSource {
public:
    explicit PlainWeightSource(const model::Weights& w) : w_(w) {}  // w must outlive this
    WeightInfo info(sim::WeightRole role, int32_t layer) const override;
    void matmul(sim::WeightRole role, int32_t layer, const float* x, int64_t m, int64_t x_stride, float* y,
                int64_t y_stride, ThreadPool& pool) const override;
    // The tensor behind (role, layer); DUET_CHECKs that it exists.
    const model::TensorRef& tensor(sim::WeightRole role, int32_t layer) const;

private:
    const model::Weights& w_;
};

}  // namespace duet::runtime
