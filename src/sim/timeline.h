#pragma once
// The modelled timeline of one run: each forward's operators in dependency order on the
// devices of the machine (sim/hardware.h: npu0, npu1.., pim0..), one queue per device, link
// transfers on one track per link, a conversion stream beside each NPU and the
// prefill->decode switch.
//
// Model (docs/co-inference.md and docs/topology.md have the derivation):
//  - Operators of a forward depend on everything before them, except that Q/K/V and gate/up
//    (same input, independent outputs) may overlap when placed on different devices; an op
//    starts when its inputs are ready and its device is free; its duration is the device's
//    hw::Device estimate.
//  - A MATMUL split by rows across devices (sim/placement.h) runs one part per device; a
//    device behind a copying link first receives the input (a transfer on the link), and its
//    partial output is gathered to npu0 (another transfer); the op ends when the last part
//    has arrived. Shared-memory links copy nothing.
//  - An NPU MATMUL whose weights live in the PIM layout converts them PIM->NZ block by block
//    on the load path while the cube computes (sim/timeline_conversion.h has the algebra).
//  - preconvert_first_token: layer 0's matrices were converted at load time (no conversion).
//  - The switch after prefill: zero_copy_switch -> pointer switch (hw.pointer_switch_ns);
//    otherwise every PIM-layout matrix is converted NZ -> PIM (LayoutModel::nz_to_pim_ns).
//    Both count in TTFT.
//  - Every forward is one engine step: with RunOptions::serving_step_cost its operators start
//    after SimHardware::step_host_ns of serving-stack host work (not under pim_only); it counts
//    in TTFT and in every TBT.
//  - Decode with batch > 1: weight_base_shared -> one MATMUL with m = batch; off -> one
//    MATMUL per sequence, each streaming the weights again.
// Thread safety: pure function of its inputs (devices are only asked const questions).
#include <string>
#include <vector>

#include "sim/hardware.h"
#include "sim/placement.h"
#include "sim/planner.h"
#include "sim/run_options.h"

namespace duet::sim {

// One row of the trace: a device's compute queue, its conversion stream or host launches, or a link.
struct TrackInfo {
    std::string group;  // the device or link it belongs to: "npu0", "pim1", "pim1-npu0"
    std::string name;   // "compute", "conversion (PIM->NZ)", "host launch", "transfers"
};

struct TimelineEvent {
    int track = 0;        // index into Timeline::tracks
    std::string name;     // "L3 matmul ffn_up", "convert L3 matmul ffn_up", "gather L3 matmul ffn_up [2/2]"
    double start_ns = 0, dur_ns = 0;
    Phase phase = Phase::PREFILL;
};

struct DeviceStats {
    std::string name;         // "npu0", "pim1" (SimDevice::name); empty for a kind total
    DeviceKind kind = DeviceKind::NPU;
    double busy_ns = 0;       // time the device computed
    double bytes_moved = 0;   // over the external memory interface, as reported by the device model
    double weight_bytes = 0;  // weight / KV operand bytes of the ops the device ran (OpShape::weight_bytes)
    double energy_pj = 0;
    double launch_ns = 0;     // part of busy_ns that is launch/dispatch overhead
    int64_t ops = 0;          // operators (a split MATMUL counts once on every device it ran on)
    double comm_ns = 0;       // time its collectives and pipeline sends took (sim/collective.h)
    double exposed_comm_ns = 0;  // part of comm_ns during which the device computed nothing
    void add(const DeviceStats& o);  // sums the figures (not the name)
};

struct PhaseStats {
    std::vector<DeviceStats> device;  // indexed like SimHardware::devices
    double wall_ns = 0;
    double step_host_ns = 0;          // serving-stack host work charged to the phase's forwards (in wall_ns)
    DeviceStats total(DeviceKind kind) const;  // summed over the devices of `kind`
    DeviceStats npu() const { return total(DeviceKind::NPU); }
    DeviceStats pim() const { return total(DeviceKind::PIM); }
    int devices_of(DeviceKind kind) const;
};

struct LinkStats {
    std::string name;         // "pim1-npu0"
    double busy_ns = 0;       // time the link carried transfers
    double bytes = 0;
    int64_t transfers = 0;
};

struct Timeline {
    double prefill_ns = 0;          // end of the prefill forward (first token sampled)
    double switch_ns = 0;           // pointer switch or full conversion after prefill
    double ttft_ns = 0;             // prefill_ns + switch_ns
    std::vector<double> tbt_ns;     // one per decode forward
    double mlp_prefetched_bytes = 0; // gate/up weight bytes read from L2 after a prefetch (RunOptions::prefetch_mlp)
    double conversion_ns = 0;       // total time the converter worked (prefill + decode)
    double conversion_exposed_ns = 0;  // time compute waited for conversion
    double conversion_bytes_read = 0;
    double conversion_energy_pj = 0;
    int64_t conversions = 0;        // matrices converted
    int64_t pim_matmul_parts = 0;   // weight-matmul parts (MATMUL, MOE_MATMUL) a PIM device ran, every rank
    PhaseStats prefill, decode;
    std::vector<LinkStats> links;   // indexed like SimHardware::links (prefill + decode)
    std::vector<TrackInfo> tracks;  // what TimelineEvent::track indexes
    std::vector<TimelineEvent> events;  // when RunOptions::record_events (decode steps per record_decode_steps)
};

Timeline simulate_timeline(const ModelShape& shape, const Plan& plan, const Placer& placer, const RunOptions& opts,
                           const SimHardware& hw);
// The same, pricing operators through `costs` (sim/timeline_parts.h), a cache of device estimates
// kept across calls on the same hardware: the serving model times thousands of steps whose
// operators mostly share shapes (serving/step_cost.h).
namespace detail {
class CostCache;
}
Timeline simulate_timeline(const ModelShape& shape, const Plan& plan, const Placer& placer, const RunOptions& opts,
                           const SimHardware& hw, detail::CostCache& costs);

}  // namespace duet::sim
