#pragma once
// The work a CXL PIM device's controller does between the AiM commands of a decode block:
// CENT's CXL controller (Gu et al., ASPLOS 2025) holds one 16-lane vector unit per channel, a
// shared buffer and RISC-V cores, which sum the RMSNorm's partial squares and take its
// reciprocal root, exponentiate, sum and normalise the softmax scores, and compute the rotary
// products. A PIM preset's [controller] section gives the cycle counts; the formulas are CENT's
// (Morteza1814/CENT @a5d6e53 cent_simulation/run_sim.py calculate_acc_latency, constants from
// cent_power_calculator.py):
//   vector op       = vector_units x 2 x sb_read + 1 + sb_write        (ACCEL_CYCLE["VEC"])
//   exp op          = vector_units x sb_read + exp_lane + sb_write     (ACCEL_CYCLE["EXP"])
//   RMSNorm of d    = d / lanes^2 / vector_units x vector op + (sb_read + sb_write + 1) + rv_rmsnorm
//   softmax, h heads over L positions
//                   = L h / lanes / vector_units x (exp op + vector op) + h x sb_read
//                     + h x (lanes x sb_write + rv_softmax / riscv_cores + sb_read)
//   rotary of q and k elements = (q + k) x rv_rotary / riscv_cores
// all in controller cycles at clock_mhz. Without a [controller] section every cost is 0.
// Pure functions; times in ns.
#include <cstdint>

#include "hw/pim/pim_spec.h"

namespace duet::hw::pim {

double controller_rmsnorm_ns(const PimController& c, int64_t dim);
double controller_softmax_ns(const PimController& c, int64_t heads, int64_t context);
double controller_rotary_ns(const PimController& c, int64_t q_elems, int64_t k_elems);

}  // namespace duet::hw::pim
