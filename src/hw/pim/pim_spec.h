#pragma once
// A PIM device preset (configs/hw/pim_*.toml): a base memory preset plus the processing units
// beside its banks. Plain data. Units: cycles are tCK of the base memory; _bits, _bytes, _mhz,
// _ns, _w as named.
#include <string>
#include <vector>

#include "core/dtype.h"
#include "hw/dram/dram_spec.h"

namespace duet::hw::pim {

enum class AccPrecision { FP16, FP32 };  // float accumulators; int8 always accumulates in int32

struct PimUnit {
    int banks_per_unit = 1;         // FIMDRAM: one unit per 2 banks
    int access_bits = 256;          // bits a unit consumes per column command (per bank)
    int lanes_16bit = 16;           // MAC lanes for 16-bit operands
    int lanes_int8 = 0;             // MAC lanes for int8 (0: int8 not supported)
    bool fp16 = true, bf16 = false; // supported float operand types
    AccPrecision acc = AccPrecision::FP16;
    bool reduce_in_unit = false;    // lane adder tree in the unit (else the host sums the lanes)
    int input_buffer_bytes = 0;     // input-vector capacity visible to one unit (GRF or global buffer)
    int acc_registers = 1;          // output rows a unit accumulates at once
    double unit_clock_mhz = 0;      // 0: the unit keeps up with the column rate
    // Energy of a unit's bank-local column read, pJ/bit; 0: priced at the base memory's external
    // rd_pj_per_bit (an upper bound: the data does not cross the I/O path).
    double array_read_pj_per_bit = 0;
};

struct PimTiming {
    int nCCD_AB = 0;             // all-bank MAC to MAC, cycles (unit rate and/or power limit)
    int nACT_AB = 0;             // all-bank ACT to ACT minimum, cycles (power limit; >= nRC)
    int nMAC_RD_OUT = 0;         // last MAC to first result read, cycles (unit pipeline)
    int mode_switch_cycles = 0;  // one SB->AB->AB-PIM (or back) transition, cycles
    int nRCD_MAC = 0;            // all-bank ACT to the first MAC, cycles (the base memory's nRCD unless given)
    int nRCD_EWMUL = 0;          // all-bank ACT to the first element-wise multiply, cycles (nRCD_MAC unless given)
    double host_sync_ns = 0;     // host/NPU fence before reading results
    int crf_bursts = 0;          // bursts that program the units' command registers per GEMV (FIMDRAM CRF)
    bool mode_switch_per_tile = false;  // AB <-> AB-PIM around every output tile and input vector
    // Fixed costs of the reference device's kernel (docs/hardware-model.md 3.4). FIMDRAM as
    // PIMSimulator's PIMKernel runs it: 16 park reads (one ACT + RD per bank to a reserved row)
    // before the kernel and 16 after it; GRF_A fills that are WRs to a reserved row (the weight
    // row is closed, the reserved row opened, written and closed, the weight row re-opened);
    // whole output tiles of acc_registers rows whatever m (the CRF program's loop counts are
    // fixed), with no split of k over units.
    int park_reads = 0;          // reads per channel before and after the kernel
    bool input_in_row = false;   // input fills are WR to a reserved row (else WR_GB to a buffer)
    bool whole_tiles = false;    // every tile runs acc_registers rows; m is never split over k
    // Mode changes made of writes to reserved rows (FIMDRAM changePIMMode: SB->HAB 4, HAB<->HAB_PIM
    // 1, HAB->SB 2), timed by the table's ACT/WR/PREA rows; 0: one lumped MODE (mode_switch_cycles).
    int mode_writes_sb_ab = 0, mode_writes_ab_pim = 0, mode_writes_ab_sb = 0;
};

// How decode attention (and, for CENT, the block's element-wise work) maps onto the units
// ([mapping] attention): GEMV spreads every head's K and V rows over all units as two GEMVs;
// CENT_HEAD_PER_BANK is CENT's mapping (pim_cent_mapping.h).
enum class AttentionMapping { GEMV, CENT_HEAD_PER_BANK };

// A CXL device's controller beside the channels ([controller]; pim_controller.h prices its work).
// Cycles are the controller's, at clock_mhz; clock_mhz 0: no controller (every cost 0).
struct PimController {
    double clock_mhz = 0;
    int vector_units = 0;          // 16-lane vector units (one per channel in CENT)
    int vector_lanes = 16;
    double sb_read_cycles = 0, sb_write_cycles = 0;  // one shared-buffer access
    double exp_lane_cycles = 0;    // one exponential in a lane
    int riscv_cores = 1;
    double rv_rmsnorm_cycles = 0;  // the reciprocal root of one RMSNorm, on one core
    double rv_rotary_cycles = 0;   // one rotated element, on one core
    double rv_softmax_cycles = 0;  // one head's scalar softmax step, on one core
    bool present() const { return clock_mhz > 0; }
};

struct PimSpec {
    std::string name, file, device;
    dram::DramSpec mem;          // base memory (organisation and timings)
    PimUnit unit;
    PimTiming timing;
    bool pim_normal_overlap = false;  // normal accesses can proceed while units compute
    double power_limit_w = 0;         // 0: not published
    int default_alignment_bits = 128; // layout granule assumed when none is given
    AttentionMapping attention_mapping = AttentionMapping::GEMV;
    int host_request_cycles = 1;      // cycles between single-bank requests of the device's one DMA (CENT mapping)
    PimController controller;         // absent: none

    int units_per_channel() const { return mem.org.banks() / unit.banks_per_unit; }
    bool supports(DType t) const;
    int lanes(DType t) const;  // 0 when unsupported
    std::string dtype_list() const;  // "fp16, int8" for errors
};

// Reads a PIM preset; its `base_memory` is loaded from `config_dir`/hw/<base>.toml.
PimSpec load_pim_spec_file(const std::string& path, const std::string& name, const std::string& config_dir);

}  // namespace duet::hw::pim
