#pragma once
// Adapter from layout::PimLayoutPlan (src/layout, the npu branch's PIM layout) to the
// PimPlacement the functional model walks (hw/pim/pim_functional.h). It lives in sim/ because it
// joins two lower components (hw must not include layout: scripts/check_layering.py). Header-only;
// include it from targets that link duet_hw and duet_layout (CLI, tests).
#include "hw/pim/pim_functional.h"
#include "hw/pim/pim_gemv.h"
#include "hw/pim/pim_spec.h"
#include "layout/pim_layout.h"

namespace duet::sim {

// `plan` and `base` must outlive the placement.
inline hw::pim::PimPlacement layout_placement(const layout::PimLayoutPlan& plan, const std::vector<uint8_t>& base) {
    hw::pim::PimPlacement p;
    p.base = base.data();
    p.base_bytes = base.size();
    p.channels = plan.org.channels;
    p.banks = plan.org.banks;
    p.row_bytes = plan.org.row_bytes;
    p.rows_per_bank = plan.dram_rows_per_bank;
    p.slot_base_offset = [&plan](int c, int b, int64_t r) { return layout::slot_base_offset(plan, c, b, r); };
    p.element_of_offset = [&plan](uint64_t off) {
        const layout::PimElement e = layout::element_of_offset(plan, off);
        return hw::pim::PlacedElement{e.row, e.col, e.padding};
    };
    return p;
}

// The layout's plan for a GEMV on `spec` (channels and banks of the device, its DRAM row size).
inline layout::PimLayoutPlan plan_for_device(const hw::pim::PimSpec& spec, const hw::pim::GemvShape& g,
                                             const hw::pim::GemvPlan& gp,
                                             int block_size_kb = 16) {
    layout::PimLayoutParams params;
    params.alignment_bits = g.alignment_bits;
    params.block_size_kb = block_size_kb;
    layout::MemoryOrganisation org;
    org.channels = gp.channels;
    org.banks = spec.mem.org.banks();
    org.row_bytes = spec.mem.org.page_bytes;
    return layout::plan_pim_layout(g.m, g.k, g.dtype, params, org, /*check_ratio=*/false);
}

}  // namespace duet::sim
