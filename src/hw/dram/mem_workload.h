#pragma once
// A memory access pattern for `duet pim-sim mem` and for the PIM-vs-DRAM comparison, and the
// result both fidelities report. A request is request_bytes (default 64, a cache line, as CPUs,
// NPUs and Ramulator 2 issue them): whole bursts (bus_width_bits * BL / 8 bytes) in one row of
// one bank, so a random request pays one activation for all its bursts. Counts are in bursts.
#include <cstdint>
#include <string>

#include "hw/dram/address_mapping.h"
#include "hw/dram/dram_spec.h"

namespace duet::hw::dram {

enum class Pattern { STREAM, RANDOM, STRIDED };
Pattern pattern_from_name(const std::string& name);  // "stream" | "random" | "strided"; throws otherwise
const char* pattern_name(Pattern p);

struct MemWorkload {
    Pattern pattern = Pattern::STREAM;
    uint64_t bytes = 1 << 20;       // bytes requested (rounded up to whole bursts)
    uint64_t stride_bytes = 0;      // STRIDED: distance between consecutive bursts (>= burst bytes)
    double write_fraction = 0.0;    // share of requests that are writes (deterministic hash)
    uint64_t seed = 1;              // RANDOM: address sequence
    int channels = 0;               // 0: the preset's default device (channels x pseudo x stacks)
    int queue_depth = 32;           // per channel, for reads and for writes each
    std::string mapping = AddressMapping::kDefault;
    uint64_t request_bytes = 64;    // bytes per request; at most one burst when below one burst
};

struct MemResult {
    std::string fidelity;             // "command" or "analytical"
    int channels = 0;
    uint64_t requests = 0;
    uint64_t bytes_requested = 0;     // requests x burst bytes
    uint64_t bytes_served = 0;        // bursts whose data transfer completed
    double t_ns = 0;
    double bw_gbps = 0;               // bytes_served / t_ns
    double peak_gbps = 0;             // channels x bus width x data rate
    double avg_latency_ns = 0;        // request enters the controller queue -> last data beat
    double unloaded_latency_ns = 0;   // closed bank: nRCD + nCL + nBL
    double row_hit_rate = 0;          // 1 - ACT / (RD + WR)
    uint64_t n_act = 0, n_pre = 0, n_rd = 0, n_wr = 0, n_ref = 0;
    uint64_t n_act2 = 0;              // second activation commands (ACT-2) where the standard has two
    double energy_pj = 0;             // 0 when the preset publishes no energies
};

int workload_channels(const DramSpec& spec, const MemWorkload& w);
int bursts_per_request(const DramSpec& spec, const MemWorkload& w);  // >= 1
// Byte address of request i (burst aligned) and whether it is a write.
uint64_t request_address(const DramSpec& spec, const MemWorkload& w, uint64_t capacity_bytes, uint64_t i);
bool request_is_write(const MemWorkload& w, uint64_t i);
uint64_t request_count(const DramSpec& spec, const MemWorkload& w);
void validate_workload(const DramSpec& spec, const MemWorkload& w);  // throws naming the bad parameter

// Command-level run: every channel's FR-FCFS controller over the DRAM command engine.
MemResult simulate_memory(const DramSpec& spec, const MemWorkload& w);
// Closed-form estimate of the same run (mem_analytical.cpp).
MemResult estimate_memory(const DramSpec& spec, const MemWorkload& w);

// Sustained bandwidth (GB/s) of a long sequential read over `channels` (0 = the preset's
// device) with the default mapping, from the analytical model: what a host or NPU streaming
// weights from this memory sees (refresh and row switches included). Microseconds to evaluate.
double stream_bandwidth_gbps(const DramSpec& spec, int channels = 0);

// Refreshes that fall due in a run of `busy_cycles` of work when each costs `lost_per_refresh`
// cycles: the fixed point of k = floor((busy + k * lost) / tREFI).
double refreshes_due(double busy_cycles, double lost_per_refresh, double refi_cycles);

// Energy of a finished run from its command counts (0 when the preset has none).
double memory_energy_pj(const DramSpec& spec, const MemResult& r);

}  // namespace duet::hw::dram
