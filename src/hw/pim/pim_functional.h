#pragma once
// Lane-accurate arithmetic of an all-bank GEMV on the weight bytes as a layout placed them.
// Every unit walks its own DRAM rows column by column; each column command yields
// min(alignment, access_bits) useful bits (one layout granule piece) whose operands go to lanes
// 0.. of the unit's SIMD, are multiplied with the matching input elements and accumulated in
// the preset's accumulator precision (fp16 rounds after every add; fp32; int32 for int8), per
// matrix row the piece belongs to. Lane partials are reduced in the unit (pairwise adder tree
// in accumulator precision) or on the host (fp32, lane order); partials of one matrix row from
// different banks/channels are summed on the host in fp32 (int64 for int8) in channel-major
// unit order. The result is compared with an f64 reference on the same operand values.
// hw stays independent of layout/: the placement comes in through PimPlacement (an adapter for
// layout::PimLayoutPlan is in sim/layout_placement.h). Not thread safe per call; reentrant.
#include <cstdint>
#include <functional>
#include <vector>

#include "hw/pim/pim_gemv.h"
#include "hw/pim/pim_spec.h"

namespace duet::hw::pim {

struct PlacedElement {
    int64_t row = 0, col = 0;  // matrix row, element index along k
    bool padding = false;      // a zero the layout added
};

// Where the weight bytes of W[m][k] live: DRAM row `row` of (channel, bank) holds base bytes
// [slot_base_offset, + row_bytes); element_of_offset names the matrix element at a base offset.
struct PimPlacement {
    const uint8_t* base = nullptr;
    uint64_t base_bytes = 0;
    int channels = 0, banks = 0;
    int64_t row_bytes = 0;
    int64_t rows_per_bank = 0;  // DRAM rows used in the fullest bank
    std::function<uint64_t(int channel, int bank, int64_t row)> slot_base_offset;
    std::function<PlacedElement(uint64_t offset)> element_of_offset;
};

struct FunctionalResult {
    std::vector<double> y;      // [m] as the device computes it
    std::vector<double> y_ref;  // [m] f64 reference
    double max_abs_err = 0, mean_abs_err = 0;
    double max_rel_err = 0;     // |y - y_ref| / sum_k |w x| per row, max over rows
    uint64_t partials = 0;      // (unit, matrix row) partial sums read out and reduced on the host
    uint64_t column_commands = 0;  // per-bank column accesses the units made
};

// w: the dtype's raw values (f16/bf16 bits or int8) of W[m][k] row-major, only for the reference;
// x: [k] raw values. The device side reads weights only through `placement`.
FunctionalResult run_gemv_functional(const PimSpec& spec, const GemvShape& g, const PimPlacement& placement,
                                     const void* w, const void* x);

// A placement without the layout component: matrix rows dealt round-robin over (channel, bank)
// units as the published devices map GEMV rows, each row padded to whole granules. `storage`
// receives the base bytes and must outlive the placement.
PimPlacement row_per_unit_placement(const PimSpec& spec, const GemvShape& g, const void* w,
                                    std::vector<uint8_t>& storage);

}  // namespace duet::hw::pim
