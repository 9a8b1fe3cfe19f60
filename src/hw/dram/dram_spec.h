#pragma once
// A DRAM standard at one speed grade, as read from a preset (configs/hw/<name>.toml): the
// organisation of one modelled channel (a pseudo-channel for HBM), its timings in clock
// cycles (tCK) and, where a public source gives them, energies. Plain data; copy freely.
// Units: every timing field is in tCK cycles unless it ends in _ns.
#include <cstdint>
#include <string>

namespace duet::hw::dram {

struct DramOrg {
    int channels_per_stack = 1;  // channels of one stack / package as published
    int pseudo_channels = 1;     // per channel (HBM: 2); each is modelled as an independent channel
    int stacks = 1;              // default device: stacks (HBM) or packages (LPDDR, GDDR)
    int ranks = 1;
    int bank_groups = 1;
    int banks_per_group = 1;
    int64_t rows = 0;            // per bank
    int page_bytes = 0;          // row-buffer size of one bank of one modelled channel
    int bus_width_bits = 0;      // data bus of one modelled channel
    int burst_length = 0;        // beats per column access
    int data_rate_mtps = 0;      // transfers per second per pin, in millions

    int banks() const { return ranks * bank_groups * banks_per_group; }
    int burst_bytes() const { return bus_width_bits * burst_length / 8; }
    int modelled_channels() const { return channels_per_stack * pseudo_channels * stacks; }
    int columns_per_row() const { return page_bytes / burst_bytes(); }
};

struct DramTiming {
    double tCK_ns = 0;
    int nBL = 0;  // data-bus cycles of one burst
    int nCL = 0, nCWL = 0;
    int nRCD = 0, nRCDWR = 0;  // ACT to RD, ACT to WR
    int nRP = 0, nRAS = 0, nRC = 0;
    int nCCD_S = 0, nCCD_L = 0;  // column to column, different / same bank group
    int nRRD_S = 0, nRRD_L = 0;  // ACT to ACT, different / same bank group
    int nFAW = 0;                // four-activation window
    int nWR = 0, nWTR_S = 0, nWTR_L = 0, nRTP = 0;
    int nRTW = 0;  // extra read-to-write bus turnaround beyond nCL + nBL - nCWL
    int nREFI = 0, nRFC = 0;
    // Command-bus commands per row activation: 1, or 2 where the standard splits ACTIVATE into
    // ACT-1 and ACT-2, each one CA-bus cycle (LPDDR5/5X, JESD209-5; Ramulator 2.1 @c5b1c3a
    // python/ramulator/dram/lpddr5.py commands ACT1/ACT2). Row timings count from ACT-1.
    int act_commands = 1;
    int nAAD = 0;  // two-part activation: ACT-1 to ACT-2 at most this many cycles (JESD209-5 tAAD)
};

// Energy per command and background power. `published` is false when the preset gives no
// source, in which case every field is 0 and reports say so.
struct DramEnergy {
    bool published = false;
    double act_pj = 0;          // one ACT + its PRE, one bank
    double rd_pj_per_bit = 0;   // column read incl. I/O
    double wr_pj_per_bit = 0;
    double ref_pj = 0;          // one all-bank refresh of one channel
    double background_mw = 0;   // per modelled channel
};

struct DramSpec {
    std::string name;      // preset name, e.g. "lpddr5"
    std::string standard;  // e.g. "LPDDR5-6400 16Gb x16"
    std::string file;      // preset file it was read from
    DramOrg org;
    DramTiming timing;
    DramEnergy energy;

    // Peak data bandwidth of one modelled channel in GB/s (1e9 bytes per second).
    double channel_peak_gbps() const { return org.bus_width_bits / 8.0 * org.data_rate_mtps / 1000.0; }
};

// Reads and validates a memory preset file (strict: unknown keys are errors). Checks that nBL
// matches burst_length / transfers per tCK and that nRC >= nRAS + nRP.
DramSpec load_dram_spec_file(const std::string& path, const std::string& name);

}  // namespace duet::hw::dram
