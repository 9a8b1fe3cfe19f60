#pragma once
// Weights reached through the PIM layout (issue 9): every matrix the graph's MATMUL nodes read
// (fused ones included) is reordered once into a PIM base (layout/pim_layout.h) with its block
// index; matmul then reads the base in place — kernels::matmul_blocked runs the row-major
// micro-kernel on each block the index describes, never gathering the matrix back.
//
// A stacked weight (the experts of a MOE_MATMUL: ffn_{gate,up,down}_exps [n_expert][n][k]; the
// per-head matrices of a HEAD_MATMUL: attn_k_b / attn_v_b [n_head][n][k]) is n_stack matrices:
// each gets a PIM base and block index of its own, planned by the same rules as a dense matrix of
// n x k, so an expert is read whole from its own banks' rows and no block mixes two experts.
// matmul_stack reads the matrices it is given (the experts that have tokens) through their
// indices, each once per call. A latent-attention file with W_kv_b unsplit has no k_b / v_b
// tensors: the engine splits it at load into f32 per-head matrices it owns and reads those in place
// (runtime/engine_mla.cpp); the layout holds only the file's matrices.
//
// Every weight dtype the kernels run goes through the layout: f16, bf16 and f32 as elements,
// the quantised ggml types (q8_0, q4_0, q5_0, q4_k, q6_k) as their row bytes with whole blocks per
// k-block (rule 0 of the layout). f32 matrices are converted to f16 first when f32_to_f16 is set
// (settings ascend.op_precision_mode = allow_fp32_to_fp16 and the modes that imply it): the
// layout then holds f16, info() says f16 and the numbers change; otherwise the layout holds f32.
// With q8_0_as_int8 (config.toml [pim] precision = int8) a Q8_0 matrix becomes an int8 matrix in
// the layout plus its f16 block scales beside it (layout/pim_int8.h); the GEMV reads both in
// place and its numbers are Q8_0's (kernels::BlockedWeights::scales). The other quantised types
// keep their ggml rows; an f32/f16/bf16 matrix is refused, naming [pim] precision, except a MoE
// router (ffn_gate_inp, ffn_gate_inp_shexp: the catalogue's keep_f32 rows, f32 in every file),
// which is held as an f32 matrix is without int8 (f16 when f32_to_f16).
//
// Thread safety: immutable after construction; matmul is called from the engine's thread.
#include <map>
#include <utility>
#include <vector>

#include "kernels/kernels.h"
#include "layout/pim_layout.h"
#include "runtime/weight_source.h"

namespace duet::runtime {

class PimLayoutWeightSource : public WeightSource {
public:
    // plain and g must outlive this.
    PimLayoutWeightSource(const PlainWeightSource& plain, const graph::Graph& g, const layout::PimLayoutParams& params,
                          const layout::MemoryOrganisation& org, bool f32_to_f16, bool q8_0_as_int8 = false);
    int64_t pim_count() const { return count_; }            // matrices in the layout (each expert, head one)
    int64_t converted_count() const { return converted_; }  // f32 matrices held as f16
    int64_t int8_count() const { return int8_; }            // Q8_0 matrices held as int8 + scales
    uint64_t int8_scale_bytes() const { return scale_bytes_; }  // their scale arrays
    // The PIM base and index of (role, layer) (matrix `index` of a stack), for tests; DUET_CHECKs
    // that it exists.
    const layout::PimLayoutPlan& plan(WeightRole role, int32_t layer, int64_t index = 0) const;

    WeightInfo info(WeightRole role, int32_t layer) const override;
    void matmul(WeightRole role, int32_t layer, const float* x, int64_t m, int64_t x_stride, float* y,
                int64_t y_stride, ThreadPool& pool) const override;
    void matmul_stack(WeightRole role, int32_t layer, const StackRows* groups, int64_t n_groups,
                      ThreadPool& pool) const override;

private:
    struct Matrix {
        layout::PimLayoutPlan plan;
        std::vector<uint8_t> base;
        layout::PimBlockIndex index;
        std::vector<kernels::WeightBlock> blocks;  // the index's blocks as the kernel reads them
        std::vector<uint16_t> scales;              // int8 matrices: [n][k / 32] f16 scales, else empty
    };
    Matrix add(const model::TensorRef& t, WeightRole role, int32_t layer, const layout::PimLayoutParams& params,
               const layout::MemoryOrganisation& org, bool f32_to_f16, bool q8_0_as_int8);
    const std::vector<Matrix>* find(WeightRole role, int32_t layer) const;
    static void run(const Matrix& mat, const float* x, int64_t m, int64_t x_stride, float* y, int64_t y_stride,
                    ThreadPool& pool);

    const PlainWeightSource& plain_;
    std::map<std::pair<int, int32_t>, std::vector<Matrix>> mats_;  // one Matrix, or one per matrix of a stack
    int64_t count_ = 0, converted_ = 0, int8_ = 0;
    uint64_t scale_bytes_ = 0;
};

// The kernel's view of a PIM base through its block index: one WeightBlock per descriptor, its
// k range in elements of plan.dtype (bytes / block_bytes * block_elems for quantised types; int8
// quants of plan_pim_int8 are elements) and without the granule padding of the row tail.
std::vector<kernels::WeightBlock> weight_blocks(const layout::PimLayoutPlan& plan, const layout::PimBlockIndex& index,
                                                const uint8_t* base);

}  // namespace duet::runtime
