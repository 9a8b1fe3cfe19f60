#include "runtime/pim_weight_source.h"

#include <cstring>

#include "core/error.h"
#include "graph/tensor_catalogue.h"
#include "layout/pim_int8.h"

namespace duet::runtime {

std::vector<kernels::WeightBlock> weight_blocks(const layout::PimLayoutPlan& p, const layout::PimBlockIndex& idx,
                                                const uint8_t* base) {
    const DTypeInfo& ti = dtype_info(p.dtype);
    // layout elements (bytes for quantised types) -> elements of the dtype
    auto to_elems = [&](int64_t units) {
        return dtype_is_quantized(p.dtype) ? units / p.atom_elems * ti.block_elems : units;
    };
    std::vector<kernels::WeightBlock> out;
    out.reserve(idx.blocks.size());
    for (const layout::PimBlockDescriptor& d : idx.blocks) {
        const int64_t k0 = int64_t(d.granule0) * idx.granule_elems;
        const int64_t width = int64_t(d.granules_per_row) * idx.granule_elems;  // padding included
        kernels::WeightBlock b;
        b.data = base + d.offset;
        b.row0 = d.row0;
        b.rows = d.rows;
        b.k0 = to_elems(k0);
        b.kelems = to_elems(std::min(width, p.k - k0));
        b.row_stride_bytes = size_t(width) * size_t(idx.elem_bytes);
        out.push_back(b);
    }
    return out;
}

PimLayoutWeightSource::PimLayoutWeightSource(const PlainWeightSource& plain, const graph::Graph& g,
                                             const layout::PimLayoutParams& params,
                                             const layout::MemoryOrganisation& org, bool f32_to_f16,
                                             bool q8_0_as_int8)
    : plain_(plain) {
    for (const graph::MatrixUse& m : graph::matrices(g)) {
        if (mats_.count({int(m.role), m.layer})) continue;
        const model::TensorRef& t = plain_.tensor(m.role, m.layer);
        if (!t.present()) continue;  // k_b / v_b of a file with W_kv_b unsplit: the engine's own copy
        std::vector<Matrix> stack;
        for (int64_t e = 0; e < t.n_stack; ++e)
            stack.push_back(add(t.expert(e), m.role, m.layer, params, org, f32_to_f16, q8_0_as_int8));
        count_ += t.n_stack;
        mats_.emplace(std::make_pair(int(m.role), m.layer), std::move(stack));
    }
}

PimLayoutWeightSource::Matrix PimLayoutWeightSource::add(const model::TensorRef& t, WeightRole role, int32_t layer,
                                                         const layout::PimLayoutParams& params,
                                                         const layout::MemoryOrganisation& org, bool f32_to_f16,
                                                         bool q8_0_as_int8) {
    Matrix m;
    // A router (the catalogue's keep_f32 rows) is f32 in every file: it keeps its float dtype.
    if (q8_0_as_int8 && t.dtype == DType::F32 && graph::weight_spec(role).keep_f32) q8_0_as_int8 = false;
    if (q8_0_as_int8 && !dtype_is_quantized(t.dtype))
        fail("config.toml [pim] precision = i8 holds Q8_0 matrices as int8 quants with their block scales, but the "
             "model's {}{} is {} (allowed: [pim] precision = f16, bf16 or i8; i8 needs a Q8_0 model file, whose "
             "other quantised matrices are widened to int8)",
             graph::weight_role_name(role), layer >= 0 ? fmt::format(" of layer {}", layer) : std::string(),
             dtype_name(t.dtype));
    if (q8_0_as_int8 && t.dtype == DType::Q8_0) {
        m.plan = layout::plan_pim_int8(t.rows, t.cols, params, org, false);
        layout::Int8Split sp = layout::split_q8_0(t.data, t.row_stride_bytes, t.rows, t.cols);
        m.base = layout::to_pim(sp.quants.data(), m.plan);
        m.scales = std::move(sp.scales);
        m.index = layout::build_block_index(m.plan);
        m.blocks = weight_blocks(m.plan, m.index, m.base.data());
        ++int8_;
        scale_bytes_ += uint64_t(m.scales.size()) * sizeof(uint16_t);
        return m;
    }
    const bool convert = t.dtype == DType::F32 && f32_to_f16;
    m.plan = layout::plan_pim_layout(t.rows, t.cols, convert ? DType::F16 : t.dtype, params, org, false);
    // The ND rows the layout takes: the file's rows without their stride padding (f32 -> f16 if converting).
    const size_t nd_row = size_t(m.plan.k) * size_t(m.plan.elem_bytes);
    std::vector<uint8_t> nd(size_t(t.rows) * nd_row);
    for (int64_t r = 0; r < t.rows; ++r) {
        const uint8_t* src = static_cast<const uint8_t*>(t.data) + size_t(r) * t.row_stride_bytes;
        uint8_t* dst = &nd[size_t(r) * nd_row];
        if (!convert) {
            std::memcpy(dst, src, nd_row);
            continue;
        }
        for (int64_t c = 0; c < t.cols; ++c) {
            float f;
            std::memcpy(&f, src + size_t(c) * 4, 4);
            const uint16_t h = fp32_to_fp16(f);
            std::memcpy(dst + size_t(c) * 2, &h, 2);
        }
    }
    m.base = layout::to_pim(nd.data(), m.plan);
    m.index = layout::build_block_index(m.plan);
    m.blocks = weight_blocks(m.plan, m.index, m.base.data());
    converted_ += convert;
    return m;
}

const std::vector<PimLayoutWeightSource::Matrix>* PimLayoutWeightSource::find(WeightRole role, int32_t layer) const {
    auto it = mats_.find({int(role), layer});
    return it == mats_.end() ? nullptr : &it->second;
}

const layout::PimLayoutPlan& PimLayoutWeightSource::plan(WeightRole role, int32_t layer, int64_t index) const {
    const std::vector<Matrix>* v = find(role, layer);
    DUET_CHECK(v && index >= 0 && index < int64_t(v->size()), "no PIM matrix {} for {} of layer {}", index,
               graph::weight_role_name(role), layer);
    return (*v)[size_t(index)].plan;
}

WeightInfo PimLayoutWeightSource::info(WeightRole role, int32_t layer) const {
    const std::vector<Matrix>* v = find(role, layer);
    if (!v) return plain_.info(role, layer);
    const Matrix& first = v->front();
    const layout::PimLayoutPlan& p = first.plan;
    // int8 quants + f16 scales: Q8_0's numbers and bytes
    const DType dtype = first.scales.empty() ? p.dtype : DType::Q8_0;
    const uint64_t bytes_one =
        first.scales.empty() ? p.weight_bytes : uint64_t(row_bytes(DType::Q8_0, p.k)) * uint64_t(p.n_rows);
    return WeightInfo{p.n_rows, p.k_dtype_elems, dtype, bytes_one * uint64_t(v->size())};
}

void PimLayoutWeightSource::run(const Matrix& mat, const float* x, int64_t m, int64_t x_stride, float* y,
                                int64_t y_stride, ThreadPool& pool) {
    kernels::BlockedWeights w{mat.plan.dtype, mat.plan.n_rows, mat.plan.k_dtype_elems, mat.blocks.data(),
                              int64_t(mat.blocks.size())};
    if (!mat.scales.empty()) {  // int8 quants in the base, scales beside: split Q8_0
        w.wtype = DType::Q8_0;
        w.scales = mat.scales.data();
        w.scale_stride = mat.plan.k / layout::kInt8ScaleBlock;
    }
    kernels::matmul_blocked(x, m, w.k, x_stride, w, y, y_stride, pool);
}

void PimLayoutWeightSource::matmul(WeightRole role, int32_t layer, const float* x, int64_t m, int64_t x_stride,
                                   float* y, int64_t y_stride, ThreadPool& pool) const {
    const std::vector<Matrix>* v = find(role, layer);
    if (!v) return plain_.matmul(role, layer, x, m, x_stride, y, y_stride, pool);
    DUET_CHECK(v->size() == 1, "{} of layer {} is a stack of {}: matmul_stack reads it", graph::weight_role_name(role),
               layer, v->size());
    run(v->front(), x, m, x_stride, y, y_stride, pool);
}

void PimLayoutWeightSource::matmul_stack(WeightRole role, int32_t layer, const StackRows* groups, int64_t n_groups,
                                         ThreadPool& pool) const {
    const std::vector<Matrix>* v = find(role, layer);
    if (!v) return plain_.matmul_stack(role, layer, groups, n_groups, pool);
    for (int64_t i = 0; i < n_groups; ++i) {
        const StackRows& g = groups[i];
        DUET_CHECK(g.index >= 0 && g.index < int64_t(v->size()), "{} of layer {}: matrix {} of a stack of {}",
                   graph::weight_role_name(role), layer, g.index, v->size());
        run((*v)[size_t(g.index)], g.x, g.m, g.x_stride, g.y, g.y_stride, pool);
    }
}

}  // namespace duet::runtime
