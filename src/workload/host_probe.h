#pragma once
// `duet calibrate --host-profile FILE`: profiles duet's own engine on this machine (vidur-style operator
// profiling) into a host profile (hw/cpu/host_profile.h) that `duet bench --workload serving
// --host-profile FILE` times its modelled steps with, so the simulator can be checked against
// the real `duet serve` on the same CPU.
//
// The probe runs the real batcher over the model file (the server's engine, scheduler and
// sampler; prefix cache off so every prompt token is computed) through probe phases — decode
// batches of 1, 2, 4, ... sequences, long and short prompts alone and together (chunked prefill
// mixed with decode) — with every operator timed at the dispatch point (runtime/dispatch.h
// set_timer) and every step's wall time taken from the batcher's step records. Then:
//   matmul:      per weight dtype and rows m (the op shape the simulator sees: sim::to_op_shape),
//                the byte-weighted median of ns per weight byte over the records;
//   attention:   ns on [1, KV bytes, FLOPs]; copy, elementwise: ns on [1, bytes] per class (the
//                OUTPUT marker, whose sampling runs outside the operator, excluded). Samples are
//                grouped by the octave of each feature, each group gives its medians (a thread
//                preempted by another process makes single operators tens of times slower), and
//                the groups are fitted by least squares in relative terms (each group's row and
//                time divided by its time);
//   step:        per number of sequences in a step, the median of (step wall - its operators'
//                ns - its OUTPUT records' modelled ns), fitted on [1, sequences], so that the
//                simulator's step (host work + modelled operators) sums to the measured wall.
// A least-squares coefficient that comes out negative is dropped (that feature gets 0) and
// the rest refitted. Thread safety: runs on the caller's thread plus the engine's threads.
#include <cstdint>
#include <functional>
#include <string>

#include "hw/cpu/host_profile.h"

namespace duet::workload {

struct HostProbeOptions {
    int threads = 0;             // the engine's threads (0: every core, as `duet serve`)
    int64_t max_batch = 16;      // decode batches 1, 2, 4, ... up to this
    int64_t decode_tokens = 24;  // tokens generated per request of a decode phase
    int64_t long_prompt = 512;   // the longest probe prompt (chunked prefill at the step budget)
    int64_t step_tokens = 512;   // the batcher's step token budget (`duet serve`'s)
    uint64_t seed = 1;           // prompt token ids
    std::string samples_path;    // non-empty: every timed operator as CSV (kind, shape, ns) to this file
};

// Probes `model_path` (a GGUF file). `progress` hears one line per phase (may be empty).
// Throws duet::Error for an unreadable model or a context too short for the probe.
hw::cpu::HostProfile probe_host(const std::string& model_path, const HostProbeOptions& o,
                                const std::function<void(const std::string&)>& progress = {});

}  // namespace duet::workload
