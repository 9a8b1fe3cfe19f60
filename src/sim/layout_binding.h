#pragma once
// sim::LayoutModel backed by layout/ (plan_pim_layout, FRACTAL_NZ sizes, NPU conversion cost).
// Plans and conversion costs are memoised per matrix shape under a mutex: thread safe, so one binding serves
// concurrent runs (the cached rig of workload/rig_cache.h).
#include <map>
#include <mutex>
#include <tuple>

#include "layout/conversion_cost.h"
#include "layout/pim_layout.h"
#include "sim/hardware.h"

namespace duet::sim {

class LayoutBinding : public LayoutModel {
public:
    // to_nd: [reorder] target_format = "ND": blocks are gathered into ND rows by a vector pass
    // (PIM_TO_ND, written back to device memory) instead of converted to NZ on the load path.
    LayoutBinding(layout::PimLayoutParams params, layout::MemoryOrganisation org, layout::NpuDataPath path,
                  bool to_nd = false)
        : params_(params), org_(org), path_(path), to_nd_(to_nd) {}
    uint64_t nz_bytes(int64_t n, int64_t k, DType dtype) const override;
    PimMatrixInfo pim(int64_t n, int64_t k, DType dtype) const override;
    double nz_to_pim_ns(int64_t n, int64_t k, DType dtype) const override;
    const layout::PimLayoutParams& params() const { return params_; }
    const layout::MemoryOrganisation& organisation() const { return org_; }

private:
    const layout::PimLayoutPlan& plan_locked(int64_t n, int64_t k, DType dtype) const;  // mu_ held
    layout::PimLayoutParams params_;
    layout::MemoryOrganisation org_;
    layout::NpuDataPath path_;
    bool to_nd_;
    mutable std::mutex mu_;  // guards plans_, infos_ and to_pim_ns_
    mutable std::map<std::tuple<int64_t, int64_t, int>, layout::PimLayoutPlan> plans_;
    mutable std::map<std::tuple<int64_t, int64_t, int>, PimMatrixInfo> infos_;
    mutable std::map<std::tuple<int64_t, int64_t, int>, double> to_pim_ns_;
};

}  // namespace duet::sim
