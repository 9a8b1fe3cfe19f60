#pragma once
// The modelled timeline of one run: each forward's operators in dependency order on their
// units (NPU, PIM), a conversion stream beside the NPU, and the prefill->decode switch.
//
// Model (docs/co-inference.md has the derivation):
//  - Operators of a forward depend on their predecessor; an op starts when its input is ready
//    and its unit is free; its duration is the unit's hw::Device estimate.
//  - An NPU MATMUL whose weights live in the PIM layout converts them PIM->NZ block by block
//    on the load path while the cube computes. With c = conversion and p = compute time per
//    block, N blocks, compute free at T0 and the converter able to start at S:
//      prefetch_depth D = 0: serial, end = max(T0, S + c) + p + (N - 1)(c + p)
//      D >= 1: end = max(T0 + N p, S + c + N p, S + N c + p), where up to D + 1 blocks of the
//      next matmul are converted ahead during the ops in between (attention, norms).
//    Conversion is hidden when c <= p and visible when c > p.
//  - preconvert_first_token: layer 0's matrices were converted at load time (no conversion).
//  - The switch after prefill: zero_copy_switch -> pointer switch (hw.pointer_switch_ns);
//    otherwise every PIM-layout matrix is converted NZ -> PIM (LayoutModel::nz_to_pim_ns).
//    Both count in TTFT.
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

enum class Track { NPU = 0, PIM = 1, CONVERT = 2, HOST = 3 };
constexpr int kTracks = 4;
const char* track_name(Track t);

struct TimelineEvent {
    Track track = Track::NPU;
    std::string name;     // "L3 matmul ffn_up", "convert L3 ffn_up", "switch"
    double start_ns = 0, dur_ns = 0;
    Phase phase = Phase::PREFILL;
};

struct UnitStats {
    double busy_ns = 0;       // time the unit computed
    double bytes_moved = 0;   // over the external memory interface, as reported by the device model
    double weight_bytes = 0;  // weight / KV operand bytes of the ops the unit ran (OpShape::weight_bytes)
    double energy_pj = 0;
    double launch_ns = 0;     // part of busy_ns that is launch/dispatch overhead
    int64_t ops = 0;
};

struct PhaseStats {
    UnitStats unit[kUnits];
    double wall_ns = 0;
};

struct Timeline {
    double prefill_ns = 0;          // end of the prefill forward (first token sampled)
    double switch_ns = 0;           // pointer switch or full conversion after prefill
    double ttft_ns = 0;             // prefill_ns + switch_ns
    std::vector<double> tbt_ns;     // one per decode forward
    double conversion_ns = 0;       // total time the converter worked (prefill + decode)
    double conversion_exposed_ns = 0;  // time compute waited for conversion
    double conversion_bytes_read = 0;
    double conversion_energy_pj = 0;
    int64_t conversions = 0;        // matrices converted
    PhaseStats prefill, decode;
    std::vector<TimelineEvent> events;  // when RunOptions::record_events
};

Timeline simulate_timeline(const ModelShape& shape, const Plan& plan, const Placer& placer, const RunOptions& opts,
                           const SimHardware& hw);

}  // namespace duet::sim
