#pragma once
// The host CPU as the serving engine runs on it: a profile of duet's own operators measured on
// this machine (`duet calibrate --host-profile FILE`, workload/host_probe.h), the way vidur profiles a GPU's
// operators before simulating a serving system. `duet bench --workload serving --host-profile
// FILE` times every modelled step with it (hw/cpu/host_engine_device.h), so the simulator
// predicts the real `duet serve` on the same machine (docs/serving.md "The host twin").
//
// What is measured (each from the engine's own operator timings over probe steps):
//   matmul: ns per weight byte of a MATMUL (and expert/head matmul) at m rows, per weight dtype:
//           total time / total weight bytes of every matmul record with that m (the model's
//           matrices as they come); between measured m linear in m, beyond the largest
//           proportional to m (compute bound), below the smallest the smallest's rate.
//   attention: ns = a + ns_per_kv_byte * KV bytes read + ns_per_flop * FLOPs (least squares
//           over every attention record of the probe).
//   elementwise, copy: ns = a + ns_per_byte * bytes (f32 activations as the engine holds them).
//   step:   the host work of one engine step outside the operators (scheduling, sampling,
//           detokenisation, callbacks): step wall time - operator time = a + ns_per_seq * sequences.
// File format (TOML, every key required unless said):
//   [host]  cpu, threads, model, measured (strings/ints: provenance), kv_block_tokens, memory_gib
//   [matmul.<dtype>]  m<rows> = ns per weight byte (at least one)
//   [attention] ns, ns_per_kv_byte, ns_per_flop     [elementwise] ns, ns_per_byte
//   [copy] ns, ns_per_byte                           [step] ns, ns_per_seq
// Thread safety: a loaded profile is immutable.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace duet::hw::cpu {

struct LinearCost {
    double ns = 0;           // fixed part per operator
    double ns_per_byte = 0;  // per byte moved (input + output + weights)
};

struct HostProfile {
    std::string path;  // the file it was read from (errors name it); empty when built in memory
    std::string cpu, model, measured;
    int64_t threads = 0;
    int64_t kv_block_tokens = 16;
    double memory_gib = 0;
    std::map<DType, std::map<int64_t, double>> matmul;  // dtype -> rows -> ns per weight byte
    double attention_ns = 0, attention_ns_per_kv_byte = 0, attention_ns_per_flop = 0;
    LinearCost elementwise, copy;
    double step_ns = 0, step_ns_per_seq = 0;
};

// Throws duet::Error naming the file and key (missing, out of range, unknown dtype or key).
HostProfile load_host_profile(const std::string& path);
// The TOML text load_host_profile reads back to the same profile (values printed round-trip exact).
std::string host_profile_toml(const HostProfile& p);
// ns per weight byte of a matmul of `rows` rows in `dtype` (the header's interpolation). Throws
// duet::Error naming the profile's file when it has no rate for the dtype.
double matmul_ns_per_weight_byte(const HostProfile& p, DType dtype, int64_t rows);

}  // namespace duet::hw::cpu
