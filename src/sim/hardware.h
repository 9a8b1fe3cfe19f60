#pragma once
// What the simulator needs to know about the hardware, as interfaces and plain numbers the
// CLI fills from the device presets (sim never hard-codes a device):
//  - hw::Device for the NPU and the PIM (supports/estimate per operator);
//  - LayoutModel: how a weight matrix is stored (NZ for the baseline; the PIM base plus its
//    block index for co-inference) and what converting it costs on the NPU;
//  - a few scalars for verdicts and warnings (peak bandwidths, capacity).
// Units are in the names. Pointers are not owned and must outlive the simulation.
#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "hw/device.h"

namespace duet::sim {

enum class Unit { NPU = 0, PIM = 1 };
constexpr int kUnits = 2;
const char* unit_name(Unit u);

// One weight matrix W[n][k] in the PIM layout.
struct PimMatrixInfo {
    uint64_t base_bytes = 0;     // the weight base (granule padding included)
    uint64_t index_bytes = 0;    // its block index
    int64_t n_blocks = 1;        // conversion blocks (block_size_kb)
    double to_nz_ns = 0;         // PIM -> NZ on the NPU load path, whole matrix, all cores
    uint64_t to_nz_bytes_read = 0;  // bytes that conversion reads (bursts rounded, index included)
};

class LayoutModel {
public:
    virtual ~LayoutModel() = default;
    virtual uint64_t nz_bytes(int64_t n, int64_t k, DType dtype) const = 0;  // W[n][k] in FRACTAL_NZ
    virtual PimMatrixInfo pim(int64_t n, int64_t k, DType dtype) const = 0;
    // NZ -> PIM of the whole matrix through the vector units (zero_copy_switch = false).
    virtual double nz_to_pim_ns(int64_t n, int64_t k, DType dtype) const = 0;
};

struct SimHardware {
    const hw::Device* npu = nullptr;  // required
    const hw::Device* pim = nullptr;  // required unless every run is npu_only
    const LayoutModel* layout = nullptr;  // required
    std::string memory_name;          // e.g. "HBM2-PIM"
    double mem_bw_gbps = 0;           // peak external bandwidth of the memory holding weights and KV
    double pim_internal_bw_gbps = 0;  // aggregate bandwidth the PIM units see inside the banks
    uint64_t mem_capacity_bytes = 0;  // device memory (0: unknown, not checked)
    double conversion_pj_per_byte = 0;  // energy of one extra byte read by a layout conversion
    double pointer_switch_ns = 0;     // prefill -> decode switch with zero_copy_switch (a sync)
    int64_t kv_block_tokens = 128;    // paged KV cache block (tokens per block)
};

}  // namespace duet::sim
