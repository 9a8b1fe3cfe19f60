#include "sim/layout_binding.h"

#include "layout/nz_format.h"

namespace duet::sim {

const layout::PimLayoutPlan& LayoutBinding::plan_locked(int64_t n, int64_t k, DType dtype) const {
    auto key = std::make_tuple(n, k, int(dtype));
    auto it = plans_.find(key);
    if (it == plans_.end()) it = plans_.emplace(key, layout::plan_pim_layout(n, k, dtype, params_, org_, false)).first;
    return it->second;
}

uint64_t LayoutBinding::nz_bytes(int64_t n, int64_t k, DType dtype) const {
    // quantised rows as int8 fractals of their bytes (layout::nz_storage_dtype)
    if (dtype_is_quantized(dtype)) return layout::nz_shape(n, int64_t(row_bytes(dtype, k)), DType::I8).nz_bytes();
    return layout::nz_shape(n, k, dtype).nz_bytes();
}

PimMatrixInfo LayoutBinding::pim(int64_t n, int64_t k, DType dtype) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto key = std::make_tuple(n, k, int(dtype));
    auto it = infos_.find(key);
    if (it != infos_.end()) return it->second;
    const layout::PimLayoutPlan& p = plan_locked(n, k, dtype);
    layout::ConversionCost c =
        to_nd_ ? layout::matrix_conversion_cost(layout::ConversionKind::PIM_TO_ND, layout::ConversionEngine::VECTOR, p, path_)
               : layout::matrix_conversion_cost(layout::ConversionKind::PIM_TO_NZ, layout::ConversionEngine::LOAD_PATH, p,
                                                path_);
    PimMatrixInfo info;
    info.base_bytes = p.base_bytes;
    info.index_bytes = p.index_bytes;
    info.n_blocks = p.n_blocks;
    info.to_nz_ns = c.t_ns;
    info.to_nz_bytes_read = c.bytes_read;
    infos_.emplace(key, info);
    return info;
}

double LayoutBinding::nz_to_pim_ns(int64_t n, int64_t k, DType dtype) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto key = std::make_tuple(n, k, int(dtype));
    auto it = to_pim_ns_.find(key);
    if (it != to_pim_ns_.end()) return it->second;
    const double t = layout::matrix_conversion_cost(layout::ConversionKind::NZ_TO_PIM, layout::ConversionEngine::VECTOR,
                                                    plan_locked(n, k, dtype), path_)
                         .t_ns;
    to_pim_ns_.emplace(key, t);
    return t;
}

}  // namespace duet::sim
