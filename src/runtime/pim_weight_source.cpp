#include "runtime/pim_weight_source.h"

#include <cstring>

#include "core/error.h"
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
    for (const graph::MatrixUse& m : graph::matrices(g))
        if (!mats_.count({int(m.role), m.layer})) add(m.role, m.layer, params, org, f32_to_f16, q8_0_as_int8);
}

void PimLayoutWeightSource::add(WeightRole role, int32_t layer, const layout::PimLayoutParams& params,
                                const layout::MemoryOrganisation& org, bool f32_to_f16, bool q8_0_as_int8) {
    const model::TensorRef& t = plain_.tensor(role, layer);
    Matrix m;
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
        mats_.emplace(std::make_pair(int(role), layer), std::move(m));
        return;
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
    if (!it->second.scales.empty())  // int8 quants + f16 scales: Q8_0's numbers and bytes
        return WeightInfo{p.n_rows, p.k_dtype_elems, DType::Q8_0,
                          uint64_t(row_bytes(DType::Q8_0, p.k)) * uint64_t(p.n_rows)};
    return WeightInfo{p.n_rows, p.k_dtype_elems, p.dtype, p.weight_bytes};
}

void PimLayoutWeightSource::matmul(WeightRole role, int32_t layer, const float* x, int64_t m, int64_t x_stride,
                                   float* y, int64_t y_stride, ThreadPool& pool) const {
    auto it = mats_.find({int(role), layer});
    if (it == mats_.end()) return plain_.matmul(role, layer, x, m, x_stride, y, y_stride, pool);
    const Matrix& mat = it->second;
    kernels::BlockedWeights w{mat.plan.dtype, mat.plan.n_rows, mat.plan.k_dtype_elems, mat.blocks.data(),
                              int64_t(mat.blocks.size())};
    if (!mat.scales.empty()) {  // int8 quants in the base, scales beside: split Q8_0
        w.wtype = DType::Q8_0;
        w.scales = mat.scales.data();
        w.scale_stride = mat.plan.k / layout::kInt8ScaleBlock;
    }
    kernels::matmul_blocked(x, m, w.k, x_stride, w, y, y_stride, pool);
}

}  // namespace duet::runtime
