#pragma once
// Modelled cost, on the NPU, of converting weights between the ND, FRACTAL_NZ and PIM layouts
// (issue 3 item 4; issue 4's timeline overlaps `prefetch_depth` of these per-block costs with
// cube compute). layout/ depends on core only, so the NPU figures arrive as a plain struct that
// the caller fills from the NPU preset (hw::npu::NpuPreset has the same quantities, sourced from
// CANN's platform_config/<SoC>.ini [AICoreSpec]/[AICoreMemoryRates]).
//
// Two engines:
//  * LOAD_PATH: the conversion happens on the GM->L1 transfer (the MTE2 DMA's ND->NZ mode), the
//    result stays in L1 for the cube. Cost = the transfer, with every contiguous source run
//    rounded up to the 32-byte DMA burst, plus one DMA set-up per block, at min(per-core GM read
//    rate, the core's share of the device memory bandwidth). PIM->NZ additionally reads the
//    block's index entries (in bulk: no set-up of their own). Nothing is written back, as long
//    as the prefetched blocks fit in L1 (see l1_staging_hit_rate). This is the prefill path of
//    npu_pim_coop.
//  * VECTOR: a standalone TransData-like pass through the vector unit: GM->UB read, the vector
//    unit permutes the bytes (vector_bytes_per_cycle per core), UB->GM write. The three stages
//    are double-buffered, so a core's time is the slowest stage; the read and the write each pay
//    one DMA set-up per block. Used for whole-matrix conversions (e.g. zero_copy_switch off:
//    NZ->PIM at the prefill->decode switch).
//
// Block size (issue 9 item 2, docs/hardware-model.md section 7): a block is one DMA transfer, so
// its fixed set-up is paid once per block and the reorder overhead over an ideal transfer is
// dma_setup_bytes / block bytes (doubles when the block halves). The blocks converted ahead
// ((prefetch_depth + 1) of them) are staged in L1 beside the cube's double-buffered operand
// tiles; what does not fit spills to L2 and is read back, so large blocks with deep prefetch
// lose L1 hits.
//
// All times in ns; rates in bytes per core clock cycle; bandwidth in GB/s (1e9 bytes/s).
// Thread safety: pure functions.
#include <cstdint>

#include "core/dtype.h"
#include "layout/pim_layout.h"

namespace duet::layout {

struct NpuDataPath {
    double clock_mhz = 1800;               // AI core clock
    int cores = 24;                        // cores that share the conversion
    double gm_read_bytes_per_cycle = 32;   // per core, device memory -> L1/UB (ini ddr_read_rate)
    double gm_write_bytes_per_cycle = 32;  // per core, UB -> device memory (ini ub_to_ddr_rate)
    double vector_bytes_per_cycle = 256;   // per core, vector unit throughput (ini vec_calc_size: 128 f16 lanes)
    double memory_bandwidth_gbps = 1600;   // device memory, shared by all cores
    int dma_burst_bytes = 32;              // GM access granularity (Ascend C DataCopy: 32-byte aligned)
    // Fixed cost of one DMA transfer, as bytes at the transfer's rate: a transfer of b bytes takes
    // (b + dma_setup_bytes) / rate. Source: CANN Ascend C best practices, "transfer a large data
    // block at a time" (atlas_ascendc_best_practices_10_0012/0013, CANN 8.x): single transfers of
    // 16 KB and more reach the best bandwidth. duet reads "best" as 90 % of peak at 16 KB, so
    // 16384 * (1 / 0.9 - 1) = 1820 B; the 90 % is an assumption (the page's measured curves are
    // figures without numbers). One value for every NPU: the page states it for AI processors.
    double dma_setup_bytes = 1820;
    // L1 staging of converted blocks: per-core L1 and L0A + L0B sizes ([AICoreSpec] l1_size,
    // l0_a_size, l0_b_size) and the L2 rates a spilled block is written and read back at
    // ([AICoreMemoryRates] l2_write_rate, l2_read_rate). Defaults: Ascend910B2.
    double l1_bytes = 512 * 1024;
    double l0ab_bytes = 128 * 1024;
    double l2_read_bytes_per_cycle = 110;
    double l2_write_bytes_per_cycle = 86;
};

// Share of the (prefetch_depth + 1) converted blocks that stay in L1 until the cube reads them:
// 1 while they fit in L1 minus the cube's double-buffered operand tiles (2 x (L0A + L0B), the
// Ascend C double-buffer practice), else that budget / their bytes. The rest spill to L2.
double l1_staging_hit_rate(uint64_t block_bytes, int64_t prefetch_depth, const NpuDataPath& path);

enum class ConversionKind { ND_TO_NZ, NZ_TO_ND, PIM_TO_NZ, NZ_TO_PIM, ND_TO_PIM, PIM_TO_ND };
enum class ConversionEngine { LOAD_PATH, VECTOR };
const char* conversion_kind_name(ConversionKind k);  // "nd_to_nz", ...

struct ConversionCost {
    double t_ns = 0;                  // wall time of the conversion
    uint64_t bytes_read = 0;          // from device memory, bursts rounded, index included
    uint64_t bytes_written = 0;       // to device memory (0 on the load path)
    uint64_t index_bytes_read = 0;    // part of bytes_read that is block index
    int64_t segments = 0;             // contiguous source runs
    int64_t dma_transfers = 0;        // DMA instructions (each pays NpuDataPath::dma_setup_bytes)
    // Block: parts of t_ns. Matrix: summed over the blocks (core time, not wall time).
    double setup_ns = 0;              // DMA set-up (the block-size overhead)
    double spill_ns = 0;              // L1 misses spilled to L2 and read back
    double l1_hit_rate = 1;           // LOAD_PATH: l1_staging_hit_rate of the plan's blocks
    const char* bound = "none";       // "gm_read", "gm_write", "vector", "memory_bandwidth"
};

// One block of `rows` x `cols` elements converted by one core while `active_cores` cores convert
// concurrently (they share memory_bandwidth_gbps). For PIM_* kinds `index_entry_bytes` is the
// block's share of the index (descriptor + anchors); `source_run_bytes` is the length of the
// source's contiguous runs (a PIM block row: kb_elems * elem; ND: cols * elem; NZ: 32 B).
// LOAD_PATH only allows *_TO_NZ kinds (the DMA produces NZ in L1); throws otherwise.
ConversionCost block_conversion_cost(ConversionKind kind, ConversionEngine engine, int64_t rows, int64_t cols,
                                     DType dtype, const NpuDataPath& path, int active_cores = 1,
                                     uint64_t index_entry_bytes = 0);

// Converting a whole matrix planned by `plan` (every PIM block, spread over path.cores cores). On
// the load path every block also pays its L1 misses (plan.params.prefetch_depth, block_size_kb).
ConversionCost matrix_conversion_cost(ConversionKind kind, ConversionEngine engine, const PimLayoutPlan& plan,
                                      const NpuDataPath& path);

}  // namespace duet::layout
