#pragma once
// All-bank GEMV on a PIM device, y[m] = W[m][k] . x[k] (B vectors: batch), as the published devices run it:
// mode switch into all-bank PIM mode, the input vector broadcast into every channel's
// buffers over the external bus, all-bank row activations, one MAC_AB column command per
// access_bits per bank at the units' pace, results read out over the external bus per tile of
// accumulator registers, refresh, mode switch back, host sync. Two fidelities share one plan:
// estimate_gemv() (closed form, microseconds) and simulate_gemv() (every command through the
// DRAM command engine with the PIM rows of the timing table). Thread safe (pure functions).
#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "hw/pim/pim_spec.h"

namespace duet::hw::pim {

struct GemvShape {
    int64_t m = 0;            // output rows
    int64_t k = 0;            // input length
    DType dtype = DType::F16; // weight and input operand type: F16, BF16 or I8
    int alignment_bits = 128; // layout granule ([pim] alignment): bits of a row segment per column
    int channels = 0;         // 0: the preset's device
    int batch = 1;            // input vectors sharing the weights (1..64): Y[b][m] = W . x_b
    // Blocked formats (ggml's quantised weights held as int8 blocks, [pim] precision = int8): one
    // scale of scale_bits per scale_block elements of a row, stored in the bank beside the
    // quants and loaded by the unit with column commands (docs/hardware-model.md 3.5). 0: none.
    int scale_block = 0;
    int scale_bits = 16;
};

// How the GEMV maps onto the device; shared by both fidelities and the functional model.
struct GemvPlan {
    int channels = 0, units_per_channel = 0, units = 0;
    int operand_bits = 16, lanes = 0;
    int batch = 1;                 // input vectors; the weights are re-read once per vector
    int useful_bits_per_col = 0;   // elems_per_col x operand bits
    int elems_per_col = 0;         // operands a unit uses per column command (full column)
    int64_t seg_bytes = 0;         // one task's weight bytes: k_slice padded to the granule
    // Column commands per task, averaged over consecutive tasks: the layout packs padded row
    // segments back to back, so a segment that does not start on a column boundary costs one
    // extra column (that column holds two rows and is issued once per row).
    double cols_per_task_avg = 0;
    int64_t k_split = 1;           // slices of k over units when m < units (host adds the partials)
    int64_t k_slice = 0;           // elements per slice
    int64_t tasks_per_unit = 0;    // (row, slice) pairs of the busiest unit
    int64_t cols_per_task = 0;     // column commands per task (operands; scale loads apart)
    int scale_block = 0, scale_bits = 16;  // as GemvShape
    int64_t col_bytes = 0;         // bytes one column command reads (access_bits / 8)
    int64_t scale_cols_per_task = 0;  // column commands loading one task's block scales
    int64_t cols_per_act = 0;      // columns one all-bank activation gives a unit
    int64_t tiles = 0;             // groups of acc_registers tasks
    int64_t chunks_per_tile = 1;   // input-buffer refills per tile (1 = whole slice fits)
    bool input_once = true;        // every vector's whole slice fits: broadcast once for the run
    // Loop order when the slice does not fit: tile-outer re-broadcasts the input per tile;
    // chunk-outer broadcasts each chunk once and reads per-chunk partial sums out (the host adds
    // them). The plan picks the order with fewer external bytes.
    bool chunk_outer = false;
    int64_t wr_gb_bursts_per_chunk = 0;
    int64_t rd_out_bursts_per_tile = 0;  // of a full tile
    int64_t out_bytes_per_task = 0;
    double lane_utilisation = 0;   // k / (cols_per_task_avg x elems_per_col x k_split): padding and straddles
    // Column commands of a group of `tasks` tasks over `cols` full-column slice columns.
    int64_t macs_for(int64_t tasks, int64_t cols) const;
    // Column commands loading the block scales of `elems` elements of one task (0 without
    // scales): the scales sit column-aligned beside the quants, scale_bits each.
    int64_t scale_cols_for(int64_t elems) const;
};

GemvPlan plan_gemv(const PimSpec& spec, const GemvShape& g);  // throws duet::Error on bad shapes

struct GemvResult {
    std::string fidelity;
    double t_ns = 0;
    // n_mac: column commands of the units (MACs, and for blocked formats the scale loads)
    uint64_t n_act = 0, n_mac = 0, n_rd = 0, n_wr = 0, n_ref = 0, n_pre = 0, n_mode = 0;  // all channels
    double internal_gbps = 0;       // useful weight bytes / t
    double internal_bytes = 0;      // bytes the units read from the arrays (incl. unused lanes)
    double unit_utilisation = 0;    // useful MACs / (t x units x lanes x MAC-command rate)
    double lane_utilisation = 0;    // useful operands per column / lanes
    double external_bytes = 0;      // input broadcast + result readout
    double host_stream_ns = 0;      // same weights streamed by a host/NPU over the same memory
    double speedup = 0;             // host_stream_ns / t_ns
    double energy_pj = 0;           // 0 without published energies
    const char* bound = "memory";   // "memory" (column rate) or "compute" (unit clock)
};

GemvResult estimate_gemv(const PimSpec& spec, const GemvShape& g);
GemvResult simulate_gemv(const PimSpec& spec, const GemvShape& g);

}  // namespace duet::hw::pim
