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
//    rounded up to the 32-byte DMA burst, at min(per-core GM read rate, the core's share of the
//    device memory bandwidth). PIM->NZ additionally reads the block's index entries. Nothing is
//    written back. This is the prefill path of npu_pim_coop.
//  * VECTOR: a standalone TransData-like pass through the vector unit: GM->UB read, the vector
//    unit permutes the bytes (vector_bytes_per_cycle per core), UB->GM write. The three stages
//    are double-buffered, so a core's time is the slowest stage. Used for whole-matrix
//    conversions (e.g. zero_copy_switch off: NZ->PIM at the prefill->decode switch).
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
};

enum class ConversionKind { ND_TO_NZ, NZ_TO_ND, PIM_TO_NZ, NZ_TO_PIM, ND_TO_PIM, PIM_TO_ND };
enum class ConversionEngine { LOAD_PATH, VECTOR };
const char* conversion_kind_name(ConversionKind k);  // "nd_to_nz", ...

struct ConversionCost {
    double t_ns = 0;                  // wall time of the conversion
    uint64_t bytes_read = 0;          // from device memory, bursts rounded, index included
    uint64_t bytes_written = 0;       // to device memory (0 on the load path)
    uint64_t index_bytes_read = 0;    // part of bytes_read that is block index
    int64_t segments = 0;             // contiguous source runs (DMA descriptors)
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

// Converting a whole matrix planned by `plan` (every PIM block, spread over path.cores cores).
ConversionCost matrix_conversion_cost(ConversionKind kind, ConversionEngine engine, const PimLayoutPlan& plan,
                                      const NpuDataPath& path);

}  // namespace duet::layout
