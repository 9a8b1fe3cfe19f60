#pragma once
// What the simulator needs to know about the hardware, as interfaces and plain numbers the
// CLI fills from the device presets (sim never hard-codes a device):
//  - the machine: a list of devices (hw::Device models: NPUs and PIM devices) joined by links
//    (docs/topology.md). devices[0] is npu0, the host: it runs every operator not placed
//    elsewhere and receives the gathered outputs of split operators; every other device has
//    one link to npu0 (a star), and add_mesh joins the devices of a kind pairwise (the
//    tensor/pipeline-parallel collectives' links, sim/scale_out.h);
//  - LayoutModel: how a weight matrix is stored (NZ for the baseline; the PIM base plus its
//    block index for co-inference) and what converting it costs on the NPU;
//  - a few scalars for verdicts and warnings (peak bandwidths, capacity).
// Units are in the names. Pointers are not owned and must outlive the simulation.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "hw/device.h"

namespace duet::sim {

// CPU: the host CPU (hw/cpu/host_cpu_device.h), present when a run uses placement pim_only;
// it shares memory with the star's centre, so its transfers to npu0's side cost nothing and the
// PIM devices' links stand for the host's links to them (docs/hardware-model.md "Host CPU").
enum class DeviceKind { NPU = 0, PIM = 1, CPU = 2 };
const char* device_kind_name(DeviceKind k);  // "npu", "pim", "cpu"

// One link between two devices (configs/hw/links.toml): a device's link to npu0, or a
// device-to-device link of a mesh (SimHardware::add_mesh).
struct SimLink {
    std::string name;              // "pim1-npu0", "npu1-npu2"
    int end_a = -1, end_b = -1;    // the devices it joins (indices into SimHardware::devices)
    std::string preset;            // "cxl2_x16"
    bool shared_memory = false;    // both ends use the same DRAM: nothing is copied, transfers cost 0
    double bandwidth_gbps = 0;     // GB/s = bytes per ns
    double latency_ns = 0;
    double per_transfer_ns = 0;    // fixed cost of starting one transfer (DMA setup, doorbell)
    // Flit framing (0: none): a message of b bytes goes as ceil(b / flit_payload_bytes) flits of
    // flit_bytes each, at bandwidth_gbps (CENT's CXL: 3 x 64 B messages in a 256 B flit).
    double flit_bytes = 0, flit_payload_bytes = 0;
    // The link is a device's port to a switch (links.toml fabric = "switch", "switch_multicast"):
    // what the device sends to or receives from all its peers in one step shares this one link;
    // with multicast the switch copies one message to every port (sim/collective.h).
    bool switched = false, multicast = false;
    double wire_bytes(double payload) const {
        return flit_payload_bytes > 0 ? std::ceil(payload / flit_payload_bytes) * flit_bytes : payload;
    }
    // Time one transfer of `bytes` occupies the link (0 for shared memory).
    double transfer_ns(uint64_t bytes) const {
        if (shared_memory || bytes == 0) return 0;
        return per_transfer_ns + latency_ns + wire_bytes(double(bytes)) / bandwidth_gbps;
    }
};

// A link whose ends share one memory (nothing is copied).
SimLink shared_memory_link();

struct SimDevice {
    std::string name;              // "npu0", "pim1": names stats, trace tracks and report fields
    DeviceKind kind = DeviceKind::NPU;
    const hw::Device* model = nullptr;  // required
    int link = -1;                 // index into SimHardware::links joining it to npu0; -1 for npu0
};

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
    std::vector<SimDevice> devices;   // devices[0] must be an NPU (npu0, the host)
    std::vector<SimLink> links;
    const LayoutModel* layout = nullptr;  // required
    std::string memory_name;          // e.g. "HBM2-PIM"
    double mem_bw_gbps = 0;           // peak external bandwidth of the memory holding weights and KV (all NPUs)
    double pim_internal_bw_gbps = 0;  // aggregate bandwidth the PIM units see inside the banks (all PIM devices)
    uint64_t mem_capacity_bytes = 0;  // device memory (0: unknown, not checked)
    uint64_t npu_l2_bytes = 0;        // one NPU's L2 cache (0: unknown); caps the modelled MLP prefetch
    double conversion_pj_per_byte = 0;  // energy of one extra byte read by a layout conversion
    double pointer_switch_ns = 0;     // prefill -> decode switch with zero_copy_switch (a sync)
    // Host work of the serving stack per engine step on npu0's host (scheduler, input preparation,
    // sampling, detokenisation), ns: hw::npu::NpuDevice::step_overhead_ns of the dispatch mode.
    // The timeline charges it once per forward when RunOptions::serving_step_cost (0: not modelled).
    double step_host_ns = 0;
    // The part of that host work paid per sequence of the forward (sampling), ns: 0 for the NPU
    // presets (their figures are per step); the host profile's step.ns_per_seq (hw/cpu/host_profile.h).
    double step_host_ns_per_seq = 0;
    int64_t kv_block_tokens = 128;    // paged KV cache block (tokens per block)

    // Indices of the devices of `kind`, in order (npu0, npu1, ... / pim0, pim1, ...).
    std::vector<int> devices_of(DeviceKind kind) const;
    bool has(DeviceKind kind) const;
    // Appends a device; a non-host device gets a link to npu0. Returns its index.
    int add_device(DeviceKind kind, const hw::Device* model, const SimLink& link_to_host = shared_memory_link());
    // Joins every pair of devices of `kind` not yet linked by a copy of `link` (a full mesh, like
    // the Atlas 800T A2's 8 HCCS-joined 910B). Call after every device is added.
    void add_mesh(DeviceKind kind, const SimLink& link);
    // The link joining devices x and y directly (-1: none).
    int link_between(int x, int y) const;
    // What a message from x to y crosses: the same device or two devices sharing memory with
    // npu0 -> a shared-memory link; a direct link -> it; else two hops through npu0, priced as
    // one link of the smaller bandwidth and both hops' latencies (store and forward).
    SimLink path(int x, int y) const;
};

// The classic machine: npu0 and, when `pim` is non-null, pim0 in npu0's memory (shared_memory link).
SimHardware npu_pim_hardware(const hw::Device* npu, const hw::Device* pim, const LayoutModel* layout);

}  // namespace duet::sim
