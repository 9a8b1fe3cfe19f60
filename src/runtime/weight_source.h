#pragma once
// How the engine's weight matmuls reach the weights. Every weight matmul of the forward pass
// is one call of WeightSource::matmul(role, layer, ...), so another weight layout (issue 4:
// the PIM layout read through its block index) plugs in by implementing this interface and
// handing it to Engine::set_weight_source — the forward code does not change.
//
// PlainWeightSource reads the tensors of model::Weights in place (the GGUF mapping) with
// kernels::matmul. For the fused roles of the graph it serves (graph/fuse_matmuls.h) it binds
// one matrix [part 1 rows; part 2 rows; …] per (role, layer) at construction: in place when
// the file stores the parts back to back with the same dtype and row stride (one GEMM over
// the file's bytes, no copy), otherwise concatenated once into memory it owns.
//
// Thread safety: implementations are immutable after construction; matmul is called from
// the engine's thread, which passes its pool.
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "graph/graph.h"
#include "kernels/kernels.h"
#include "model/weights.h"

namespace duet::runtime {

using graph::WeightRole;

// The logical shape of one weight matrix: n rows (output features) of k elements. For a stack
// (the experts of a MOE_MATMUL, the heads of a HEAD_MATMUL) the shape of one of its matrices and
// the bytes of all of them.
struct WeightInfo {
    int64_t n = 0;
    int64_t k = 0;
    DType dtype = DType::F32;
    uint64_t bytes = 0;  // bytes a full pass over the matrix reads
};

// One matrix of a stack and the rows it multiplies: y = x · W[index]ᵀ, x m rows of k floats
// x_stride apart, y m rows of n floats y_stride apart.
struct StackRows {
    int64_t index = 0;
    const float* x = nullptr;
    int64_t m = 0, x_stride = 0;
    float* y = nullptr;
    int64_t y_stride = 0;
};

// matmul_stack over a stacked tensor read in place (the plain layout): one kernels::matmul_grouped
// (one parallel section over (matrix, column block) items; each matrix's bytes read once).
void matmul_stack_plain(const model::TensorRef& stack, const StackRows* groups, int64_t n_groups, ThreadPool& pool);

class WeightSource {
public:
    virtual ~WeightSource() = default;
    // layer is -1 for LM_HEAD.
    virtual WeightInfo info(WeightRole role, int32_t layer) const = 0;
    // y[i][j] = sum_l x[i][l] * W[j][l], i < m, j < n (strides in floats).
    virtual void matmul(WeightRole role, int32_t layer, const float* x, int64_t m, int64_t x_stride, float* y,
                        int64_t y_stride, ThreadPool& pool) const = 0;
    // The matmuls of a stacked weight (role, layer): the experts of a MOE_MATMUL that have tokens,
    // the heads of a HEAD_MATMUL; groups[i] multiplies matrix groups[i].index (distinct indices:
    // each matrix is read once per call).
    virtual void matmul_stack(WeightRole role, int32_t layer, const StackRows* groups, int64_t n_groups,
                              ThreadPool& pool) const = 0;
    // RMSNorm fused into the input quantisation (graph/fuse_rmsnorm_matmul.h): the format in
    // which matmul_quantized takes x for (role, layer), and the matmul on x in that format (m rows
    // of k, kernels::rmsnorm_quantize's output), bit-identical to matmul() on the f32 rows. The
    // defaults take f32 rows and call matmul(): a source without the quantised entry (the PIM
    // layout) then gets the normed rows, so the fused node runs on every source.
    virtual kernels::ActFormat act_format(WeightRole role, int32_t layer) const;
    virtual void matmul_quantized(WeightRole role, int32_t layer, const void* xq, kernels::ActFormat f, int64_t m,
                                  float* y, int64_t y_stride, ThreadPool& pool) const;
};

class PlainWeightSource : public WeightSource {
public:
    explicit PlainWeightSource(const model::Weights& w) : w_(w) {}  // w must outlive this
    // Binds the fused matrix of every fused MATMUL node of g (once per (role, layer)).
    void bind_fused(const graph::Graph& g);
    WeightInfo info(WeightRole role, int32_t layer) const override;
    void matmul(WeightRole role, int32_t layer, const float* x, int64_t m, int64_t x_stride, float* y,
                int64_t y_stride, ThreadPool& pool) const override;
    void matmul_stack(WeightRole role, int32_t layer, const StackRows* groups, int64_t n_groups,
                      ThreadPool& pool) const override;
    // The kernels' own format for the tensor's dtype (kernels::act_format) and matmul_quantized.
    kernels::ActFormat act_format(WeightRole role, int32_t layer) const override;
    void matmul_quantized(WeightRole role, int32_t layer, const void* xq, kernels::ActFormat f, int64_t m, float* y,
                          int64_t y_stride, ThreadPool& pool) const override;
    // The tensor behind (role, layer): matrices, fused matrices, norm vectors, the embedding
    // table (model::Weights::at; absent when the model has no such tensor). DUET_CHECKs the
    // layer of a block role and that a fused one was bound.
    const model::TensorRef& tensor(WeightRole role, int32_t layer) const;
    // The f32 bias of a matmul role (fused: concatenated), nullptr when the model has none.
    const float* bias(WeightRole role, int32_t layer) const;
    // Fused matrices bound in place (file order allowed it) / concatenated at construction.
    int64_t fused_in_place() const { return fused_in_place_; }
    int64_t fused_copied() const { return fused_copied_; }

private:
    struct Fused {
        model::TensorRef t;
        std::vector<uint8_t> owned;  // rows when they had to be concatenated
        std::vector<float> bias;     // empty: no bias
    };
    void bind_fused_one(WeightRole role, int32_t layer);

    const model::Weights& w_;
    std::map<std::pair<int, int32_t>, Fused> fused_;
    int64_t fused_in_place_ = 0, fused_copied_ = 0;
};

}  // namespace duet::runtime
