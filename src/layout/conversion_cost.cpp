#include "layout/conversion_cost.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "layout/nz_format.h"

namespace duet::layout {
namespace {

enum class Side { ND, NZ, PIM };

Side source_of(ConversionKind k) {
    switch (k) {
        case ConversionKind::ND_TO_NZ:
        case ConversionKind::ND_TO_PIM: return Side::ND;
        case ConversionKind::NZ_TO_ND:
        case ConversionKind::NZ_TO_PIM: return Side::NZ;
        default: return Side::PIM;
    }
}
Side dest_of(ConversionKind k) {
    switch (k) {
        case ConversionKind::ND_TO_NZ:
        case ConversionKind::PIM_TO_NZ: return Side::NZ;
        case ConversionKind::NZ_TO_ND:
        case ConversionKind::PIM_TO_ND: return Side::ND;
        default: return Side::PIM;
    }
}

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

void check_path(const NpuDataPath& p) {
    if (!(p.clock_mhz > 0) || p.cores < 1 || !(p.gm_read_bytes_per_cycle > 0) || !(p.gm_write_bytes_per_cycle > 0) ||
        !(p.vector_bytes_per_cycle > 0) || !(p.memory_bandwidth_gbps > 0) || p.dma_burst_bytes < 1 ||
        !(p.l2_read_bytes_per_cycle > 0) || !(p.l2_write_bytes_per_cycle > 0))
        fail("NPU data path: every rate, the clock, the core count and the burst must be positive (clock_mhz = {}, "
             "cores = {}, gm_read = {}, gm_write = {}, vector = {}, bandwidth = {} GB/s, burst = {}, l2_read = {}, "
             "l2_write = {})",
             p.clock_mhz, p.cores, p.gm_read_bytes_per_cycle, p.gm_write_bytes_per_cycle, p.vector_bytes_per_cycle,
             p.memory_bandwidth_gbps, p.dma_burst_bytes, p.l2_read_bytes_per_cycle, p.l2_write_bytes_per_cycle);
    if (!(p.dma_setup_bytes >= 0) || !(p.l1_bytes > 0) || !(p.l0ab_bytes >= 0))
        fail("NPU data path: dma_setup_bytes = {} and l0ab_bytes = {} must be >= 0 and l1_bytes = {} > 0",
             p.dma_setup_bytes, p.l0ab_bytes, p.l1_bytes);
}

// Time the spilled share of a block costs: written to L2 and read back by the core.
double spill_ns(uint64_t block_bytes, double hit_rate, const NpuDataPath& p) {
    const double hz = p.clock_mhz * 1e6;
    const double spilled = (1.0 - hit_rate) * double(block_bytes);
    return spilled / (p.l2_write_bytes_per_cycle * hz) * 1e9 + spilled / (p.l2_read_bytes_per_cycle * hz) * 1e9;
}

}  // namespace

double l1_staging_hit_rate(uint64_t block_bytes, int64_t prefetch_depth, const NpuDataPath& path) {
    check_path(path);
    if (prefetch_depth < 0) fail("conversion cost: prefetch_depth = {} (allowed: 0 or more)", prefetch_depth);
    const double budget = std::max(0.0, path.l1_bytes - 2 * path.l0ab_bytes);
    const double need = double(prefetch_depth + 1) * double(block_bytes);
    return need <= budget ? 1.0 : budget / need;
}

const char* conversion_kind_name(ConversionKind k) {
    switch (k) {
        case ConversionKind::ND_TO_NZ: return "nd_to_nz";
        case ConversionKind::NZ_TO_ND: return "nz_to_nd";
        case ConversionKind::PIM_TO_NZ: return "pim_to_nz";
        case ConversionKind::NZ_TO_PIM: return "nz_to_pim";
        case ConversionKind::ND_TO_PIM: return "nd_to_pim";
        case ConversionKind::PIM_TO_ND: return "pim_to_nd";
    }
    return "?";
}

ConversionCost block_conversion_cost(ConversionKind kind, ConversionEngine engine, int64_t rows, int64_t cols,
                                     DType dtype, const NpuDataPath& path, int active_cores,
                                     uint64_t index_entry_bytes) {
    check_path(path);
    if (rows < 1 || cols < 1) fail("conversion cost: block [{}][{}] is empty (allowed: at least 1x1)", rows, cols);
    if (active_cores < 1) fail("conversion cost: active_cores = {} (allowed: at least 1)", active_cores);
    const Side src = source_of(kind), dst = dest_of(kind);
    if (engine == ConversionEngine::LOAD_PATH && dst != Side::NZ)
        fail("conversion cost: {} cannot run on the load path (the GM->L1 DMA only produces NZ; use the vector engine)",
             conversion_kind_name(kind));
    const NzShape nz = nz_shape(rows, cols, dtype);
    const uint64_t burst = uint64_t(path.dma_burst_bytes);
    const uint64_t row_run = uint64_t(cols) * uint64_t(nz.elem_bytes);

    ConversionCost c;
    if (src == Side::NZ) {
        // An NZ block is n1 contiguous fractal columns of m1*16 rows of 32 bytes, padding included.
        c.segments = nz.n1;
        c.bytes_read = nz.n1 * round_up(uint64_t(nz.m1 * nz.m0) * kNzFractalRowBytes, burst);
    } else {
        // ND and PIM blocks are read row by row (the DMA's ND->NZ mode walks source rows).
        c.segments = rows;
        c.bytes_read = uint64_t(rows) * round_up(row_run, burst);
    }
    if (src == Side::PIM) c.index_bytes_read = index_entry_bytes;
    c.bytes_read += c.index_bytes_read;
    if (engine == ConversionEngine::VECTOR) {
        c.bytes_written = dst == Side::NZ ? nz.nz_bytes() : uint64_t(rows) * row_run;
        if (dst == Side::PIM) c.bytes_written += index_entry_bytes;
    }

    const double hz = path.clock_mhz * 1e6;
    const double share_bps = path.memory_bandwidth_gbps * 1e9 / active_cores;
    const double read_bps = std::min(path.gm_read_bytes_per_cycle * hz, share_bps);
    // One DMA instruction reads the whole block (DataCopy's blockCount/stride form walks its rows).
    c.dma_transfers = 1;
    const double setup_read_ns = path.dma_setup_bytes / read_bps * 1e9;
    const double t_read = double(c.bytes_read) / read_bps * 1e9 + setup_read_ns;
    if (engine == ConversionEngine::LOAD_PATH) {
        c.t_ns = t_read;
        c.setup_ns = setup_read_ns;
        c.bound = path.gm_read_bytes_per_cycle * hz <= share_bps ? "gm_read" : "memory_bandwidth";
        return c;
    }
    c.dma_transfers = 2;  // and one writes it back
    const double write_bps = std::min(path.gm_write_bytes_per_cycle * hz, share_bps);
    const double setup_write_ns = path.dma_setup_bytes / write_bps * 1e9;
    const double t_write = double(c.bytes_written) / write_bps * 1e9 + setup_write_ns;
    const double t_vector = double(std::max<uint64_t>(rows * row_run, nz.nz_bytes())) / (path.vector_bytes_per_cycle * hz) * 1e9;
    const double t_shared = double(c.bytes_read + c.bytes_written) / share_bps * 1e9;
    c.t_ns = t_read;
    c.setup_ns = setup_read_ns;
    c.bound = path.gm_read_bytes_per_cycle * hz <= share_bps ? "gm_read" : "memory_bandwidth";
    if (t_write > c.t_ns) c.t_ns = t_write, c.setup_ns = setup_write_ns, c.bound = "gm_write";
    if (t_vector > c.t_ns) c.t_ns = t_vector, c.setup_ns = 0, c.bound = "vector";
    if (t_shared > c.t_ns) c.t_ns = t_shared, c.setup_ns = 0, c.bound = "memory_bandwidth";
    return c;
}

ConversionCost matrix_conversion_cost(ConversionKind kind, ConversionEngine engine, const PimLayoutPlan& plan,
                                      const NpuDataPath& path) {
    check_path(path);
    const int active = int(std::min<int64_t>(path.cores, plan.n_blocks));
    std::vector<double> core_ns(size_t(active), 0.0);
    ConversionCost total;
    const bool staged = engine == ConversionEngine::LOAD_PATH;
    if (staged)
        total.l1_hit_rate = l1_staging_hit_rate(uint64_t(plan.params.block_size_kb) * 1024, plan.params.prefetch_depth, path);
    const bool pim_side = source_of(kind) == Side::PIM || dest_of(kind) == Side::PIM;
    int64_t b = 0;
    for (int64_t rb = 0; rb < plan.n_row_blocks; ++rb)
        for (int64_t kb = 0; kb < plan.n_k_blocks; ++kb, ++b) {
            const int64_t rows = plan.block_rows(rb), cols = plan.block_kelems(kb);
            uint64_t index_entry = 0;
            if (pim_side) {
                const int64_t granules = rows * (cols / plan.granule_elems);
                const int64_t g = plan.params.index_granularity;
                index_entry = kDescriptorBytes + kAnchorBytes * uint64_t((granules + g - 1) / g);
            }
            const ConversionCost c =
                block_conversion_cost(kind, engine, rows, cols, nz_storage_dtype(plan.dtype), path, active, index_entry);
            const double spill =
                staged ? spill_ns(nz_shape(rows, cols, nz_storage_dtype(plan.dtype)).nz_bytes(), total.l1_hit_rate, path)
                       : 0;
            core_ns[size_t(b % active)] += c.t_ns + spill;
            total.bytes_read += c.bytes_read;
            total.bytes_written += c.bytes_written;
            total.index_bytes_read += c.index_bytes_read;
            total.segments += c.segments;
            total.dma_transfers += c.dma_transfers;
            total.setup_ns += c.setup_ns;
            total.spill_ns += spill;
            total.bound = c.bound;
        }
    total.t_ns = *std::max_element(core_ns.begin(), core_ns.end());
    // setup_ns and spill_ns are summed over all blocks (core time); t_ns is the busiest core's wall time
    return total;
}

}  // namespace duet::layout
