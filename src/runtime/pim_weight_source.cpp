#include "runtime/pim_weight_source.h"

#include <cstring>

#include "core/error.h"

namespace duet::runtime {

std::vector<kernels::WeightBlock> weight_blocks(const layout::PimLayoutPlan& p, const layout::PimBlockIndex& idx,
                                                const uint8_t* base) {
    const DTypeInfo& ti = dtype_info(p.dtype);
    // layout elements (bytes for quantised types) -> elements of the dtype
    auto to_elems = [&](int64_t units) { return units / p.atom_elems * ti.block_elems; };
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
                                             const layout::MemoryOrganisation& org, bool f32_to_f16)
    : plain_(plain) {
    for (const graph::MatrixUse& m : graph::matrices(g))
        if (!mats_.count({int(m.role), m.layer})) add(m.role, m.layer, params, org, f32_to_f16);
}

void PimLayoutWeightSource::add(WeightRole role, int32_t layer, const layout::PimLayoutParams& params,
                                const layout::MemoryOrganisation& org, bool f32_to_f16) {
    const model::TensorRef& t = plain_.tensor(role, layer);
    const bool convert = t.dtype == DType::F32 && f32_to_f16;
    Matrix m;
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
    mats_.emplace(std::make_pair(int(role), layer), std::move(m));
}

const layout::PimLayoutPlan& PimLayoutWeightSource::plan(WeightRole role, int32_t layer) const {
    auto it = mats_.find({int(role), layer});
    DUET_CHECK(it != mats_.end(), "no PIM matrix for {} of layer {}", graph::weight_role_name(role), layer);
    return it->second.plan;
}

WeightInfo PimLayoutWeightSource::info(WeightRole role, int32_t layer) const {
    auto it = mats_.find({int(role), layer});
    if (it == mats_.end()) return plain_.info(role, layer);
    const layout::PimLayoutPlan& p = it->second.plan;
    return WeightInfo{p.n_rows, p.k_dtype_elems, p.dtype, p.weight_bytes};
}

void PimLayoutWeightSource::matmul(WeightRole role, int32_t layer, const float* x, int64_t m, int64_t x_stride,
                                   float* y, int64_t y_stride, ThreadPool& pool) const {
    auto it = mats_.find({int(role), layer});
    if (it == mats_.end()) return plain_.matmul(role, layer, x, m, x_stride, y, y_stride, pool);
    const Matrix& mat = it->second;
    const kernels::BlockedWeights w{mat.plan.dtype, mat.plan.n_rows, mat.plan.k_dtype_elems, mat.blocks.data(),
                                    int64_t(mat.blocks.size())};
    kernels::matmul_blocked(x, m, w.k, x_stride, w, y, y_stride, pool);
}

}  // namespace duet::runtime
