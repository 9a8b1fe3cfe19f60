#include "hw/pim/pim_gemv.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "core/error.h"
#include "hw/dram/mem_workload.h"
#include "hw/pim/pim_program.h"

namespace duet::hw::pim {

GemvPlan plan_gemv(const PimSpec& s, const GemvShape& g) {
    if (g.m < 1 || g.m > (int64_t(1) << 24)) fail("--m {} is out of range (allowed: 1 to 16777216)", g.m);
    if (g.k < 1 || g.k > (int64_t(1) << 24)) fail("--k {} is out of range (allowed: 1 to 16777216)", g.k);
    if (!s.supports(g.dtype))
        fail("PIM preset '{}' does not support dtype {} (supported: {})", s.name, dtype_name(g.dtype), s.dtype_list());
    const int ab = g.alignment_bits;
    if (ab < 8 || ab > 4096 || (ab & (ab - 1)) != 0)
        fail("alignment {} bits is not allowed (allowed: a power of two from 8 to 4096, e.g. 128 or 256)", ab);
    if (g.batch < 1 || g.batch > 64) fail("--batch {} is out of range (allowed: 1 to 64)", g.batch);
    if (g.scale_block != 0 && (g.scale_block < 8 || g.scale_block > 4096 || (g.scale_block & (g.scale_block - 1)) != 0))
        fail("--scale-block {} is not allowed (allowed: 0 for none, or a power of two from 8 to 4096, e.g. 32)", g.scale_block);
    if (g.scale_bits != 8 && g.scale_bits != 16 && g.scale_bits != 32)
        fail("scale bits {} is not allowed (allowed: 8, 16, 32)", g.scale_bits);
    GemvPlan p;
    p.batch = g.batch;
    p.channels = g.channels > 0 ? g.channels : s.mem.org.modelled_channels();
    p.units_per_channel = s.units_per_channel();
    p.units = p.channels * p.units_per_channel;
    p.operand_bits = g.dtype == DType::I8 ? 8 : 16;
    p.lanes = s.lanes(g.dtype);
    if (ab < p.operand_bits)
        fail("alignment {} bits is narrower than one {} operand ({} bits)", ab, dtype_name(g.dtype), p.operand_bits);
    // Granule decision (docs/hardware-model.md 3.1): every public design reads access_bits of one
    // bank per column command, and duet's layout stores a matrix row's granules back to back
    // inside a DRAM row, so consecutive granules of one row fill the column. A unit therefore
    // uses the whole column; the granule only sets the row padding and where a row segment
    // starts inside a column.
    p.elems_per_col = std::min(s.unit.access_bits / p.operand_bits, p.lanes);
    p.useful_bits_per_col = p.elems_per_col * p.operand_bits;
    // Rows are dealt round-robin over units; with fewer rows than units, k is split too.
    p.k_split = 1;
    if (g.m < p.units && !s.timing.whole_tiles) p.k_split = std::max<int64_t>(1, std::min<int64_t>(p.units / g.m, (g.k + p.elems_per_col - 1) / p.elems_per_col));
    p.k_slice = (g.k + p.k_split - 1) / p.k_split;
    p.tasks_per_unit = (g.m * p.k_split + p.units - 1) / p.units;
    if (s.timing.whole_tiles)  // the program runs whole tiles of acc_registers rows on every unit
        p.tasks_per_unit = (p.tasks_per_unit + s.unit.acc_registers - 1) / s.unit.acc_registers * s.unit.acc_registers;
    p.cols_per_task = (p.k_slice + p.elems_per_col - 1) / p.elems_per_col;
    {
        const int64_t e_b = p.operand_bits / 8, g_bytes = ab / 8, col_bytes = p.useful_bits_per_col / 8;
        p.seg_bytes = (p.k_slice * e_b + g_bytes - 1) / g_bytes * g_bytes;
        // Segments sit back to back: task r starts at (r * seg_bytes) mod col_bytes. Average the
        // columns it touches over one period of that offset.
        const int64_t period = col_bytes / std::gcd(p.seg_bytes % col_bytes == 0 ? col_bytes : p.seg_bytes % col_bytes, col_bytes);
        double sum = 0;
        for (int64_t r = 0; r < period; ++r) {
            const int64_t off = (r * p.seg_bytes) % col_bytes;
            sum += double((off + p.seg_bytes + col_bytes - 1) / col_bytes);
        }
        p.cols_per_task_avg = sum / double(period);
        p.lane_utilisation = double(g.k) / (p.cols_per_task_avg * p.elems_per_col * double(p.k_split));
    }
    p.scale_block = g.scale_block;
    p.scale_bits = g.scale_bits;
    p.col_bytes = s.unit.access_bits / 8;
    p.scale_cols_per_task = p.scale_cols_for(p.k_slice);
    p.cols_per_act = int64_t(s.unit.banks_per_unit) * s.mem.org.page_bytes * 8 / s.unit.access_bits;
    p.tiles = (p.tasks_per_unit + s.unit.acc_registers - 1) / s.unit.acc_registers;
    const int64_t e_bytes = p.operand_bits / 8;
    // Input buffer in whole columns' worth of operands.
    int64_t buf_elems = s.unit.input_buffer_bytes / e_bytes / p.elems_per_col * p.elems_per_col;
    if (buf_elems < p.elems_per_col) buf_elems = p.elems_per_col;
    p.chunks_per_tile = (p.k_slice + buf_elems - 1) / buf_elems;
    // Resident for the whole run only when every vector's slice fits the buffer at once.
    p.input_once = p.chunks_per_tile == 1 && p.k_slice * p.batch <= buf_elems;
    const int64_t burst = s.mem.org.burst_bytes();
    // A chunk is broadcast to every unit of the channel: all slices of k the channel's units use.
    const int64_t chunk_bytes = std::min<int64_t>(buf_elems, p.k_slice) * e_bytes * std::min<int64_t>(p.k_split, p.units_per_channel);
    p.wr_gb_bursts_per_chunk = (chunk_bytes + burst - 1) / burst;
    const int acc_bytes = g.dtype == DType::I8 ? 4 : (s.unit.acc == AccPrecision::FP16 ? 2 : 4);
    p.out_bytes_per_task = int64_t(acc_bytes) * (s.unit.reduce_in_unit ? 1 : p.lanes);
    if (!p.input_once) {
        const double bcast = double(std::min<int64_t>(p.k_split, p.units_per_channel));
        const double in_slice = double(p.k_slice) * e_bytes * bcast;
        const double out_all = double(p.tasks_per_unit) * p.units_per_channel * p.out_bytes_per_task;
        const double tile_outer = double(p.tiles) * in_slice + out_all;
        const double chunk_outer = in_slice + double(p.chunks_per_tile) * out_all;
        p.chunk_outer = chunk_outer < tile_outer;
    }
    const int64_t tile_tasks = std::min<int64_t>(s.unit.acc_registers, p.tasks_per_unit);
    p.rd_out_bursts_per_tile = (tile_tasks * p.units_per_channel * p.out_bytes_per_task + burst - 1) / burst;
    return p;
}

int64_t GemvPlan::macs_for(int64_t tasks, int64_t cols) const {
    if (cols_per_task <= 0) return 0;
    const double straddle = cols_per_task_avg / double(cols_per_task);  // 1 when segments are column aligned
    return int64_t(std::ceil(double(tasks) * double(cols) * straddle - 1e-9));
}

int64_t GemvPlan::scale_cols_for(int64_t elems) const {
    if (scale_block <= 0 || elems <= 0) return 0;
    const int64_t bytes = (elems + scale_block - 1) / scale_block * (scale_bits / 8);
    return (bytes + col_bytes - 1) / col_bytes;
}

namespace {

// Tasks of the busiest unit in each channel, grouped: {tasks -> number of channels}.
std::map<int64_t, int> channel_classes(const PimSpec& s, const GemvPlan& p, const GemvShape& g) {
    std::map<int64_t, int> cls;
    if (s.timing.whole_tiles) return {{p.tasks_per_unit, p.channels}};  // every channel runs the same tiles
    const int64_t total = g.m * p.k_split;
    for (int c = 0; c < p.channels; ++c) {
        const int64_t u = int64_t(c) * p.units_per_channel;  // first unit of the channel: most tasks
        const int64_t t = u < total ? (total - u + p.units - 1) / p.units : 0;
        ++cls[t];
    }
    return cls;
}

GemvResult finish(const PimSpec& s, const GemvShape& g, const GemvPlan& p, GemvResult r, double t_cycles) {
    const auto& mt = s.mem.timing;
    r.t_ns = t_cycles * mt.tCK_ns + s.timing.host_sync_ns;
    const double e_bytes = p.operand_bits / 8.0;
    const double weight_bytes = double(g.m) * double(g.k) * e_bytes;
    r.internal_gbps = weight_bytes / r.t_ns;
    r.internal_bytes = double(r.n_mac) * p.units_per_channel * s.unit.access_bits / 8.0;
    const double mac_rate_per_ns = 1.0 / (s.timing.nCCD_AB * mt.tCK_ns);  // MAC_AB per unit per ns
    r.unit_utilisation = double(g.m) * double(g.k) / (r.t_ns * p.units * p.lanes * mac_rate_per_ns);
    r.lane_utilisation = p.lane_utilisation;
    r.external_bytes = double(r.n_wr + r.n_rd) * s.mem.org.burst_bytes();
    // Baseline: a host/NPU streams the same weight bytes through the same channels.
    dram::MemWorkload w;
    w.pattern = dram::Pattern::STREAM;
    // Blocked formats: the host reads the block scales with the quants (GeniePIM
    // estimate_host_mem_stats adds them to the matrix bytes).
    const double scale_bytes =
        g.scale_block > 0 ? double(g.m) * double((g.k + g.scale_block - 1) / g.scale_block) * (g.scale_bits / 8) : 0.0;
    w.bytes = uint64_t(weight_bytes + scale_bytes);
    w.channels = p.channels;
    r.host_stream_ns = dram::estimate_memory(s.mem, w).t_ns;
    r.speedup = r.host_stream_ns / r.t_ns;
    r.bound = s.timing.nCCD_AB > mt.nCCD_L ? "compute" : "memory";
    const auto& e = s.mem.energy;
    if (e.published) {
        const double bits = s.mem.org.burst_bytes() * 8.0;
        const double array_pj_per_bit = s.unit.array_read_pj_per_bit > 0 ? s.unit.array_read_pj_per_bit : e.rd_pj_per_bit;
        r.energy_pj = double(r.n_act) * s.mem.org.banks() * e.act_pj +
                      double(r.n_mac) * p.units_per_channel * s.unit.access_bits * array_pj_per_bit +
                      double(r.n_rd) * bits * e.rd_pj_per_bit + double(r.n_wr) * bits * e.wr_pj_per_bit +
                      double(r.n_ref) * e.ref_pj + e.background_mw * r.t_ns * p.channels;
    }
    return r;
}

}  // namespace

namespace {

// Both fidelities run the same per-channel program (pim_program.h); they differ only in how it
// is timed: through the DRAM command engine (whole cycles) or in closed form.
GemvResult run_gemv(const PimSpec& s, const GemvShape& g, bool command_level) {
    const GemvPlan p = plan_gemv(s, g);
    GemvResult r;
    r.fidelity = command_level ? "command" : "analytical";
    double end = 0;
    for (const auto& [tasks, n_ch] : channel_classes(s, p, g)) {
        if (tasks == 0) continue;
        const ProgramStats st = run_channel_program(s, p, tasks, command_level);
        end = std::max(end, command_level ? double(int64_t(st.end_cycle)) : double(st.end_cycle));
        r.n_act += st.n_act * uint64_t(n_ch);
        r.n_mac += st.n_mac * uint64_t(n_ch);
        r.n_rd += st.n_rd * uint64_t(n_ch);
        r.n_wr += st.n_wr * uint64_t(n_ch);
        r.n_ref += st.n_ref * uint64_t(n_ch);
        r.n_pre += st.n_pre * uint64_t(n_ch);
        r.n_mode += st.n_mode * uint64_t(n_ch);
    }
    return finish(s, g, p, r, end);
}

}  // namespace

GemvResult simulate_gemv(const PimSpec& s, const GemvShape& g) { return run_gemv(s, g, /*command_level=*/true); }

GemvResult estimate_gemv(const PimSpec& s, const GemvShape& g) { return run_gemv(s, g, /*command_level=*/false); }

}  // namespace duet::hw::pim
