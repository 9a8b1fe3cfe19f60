#include "hw/pim/pim_controller.h"

namespace duet::hw::pim {

namespace {

double vector_op_cycles(const PimController& c) { return c.vector_units * 2.0 * c.sb_read_cycles + 1.0 + c.sb_write_cycles; }
double exp_op_cycles(const PimController& c) { return c.vector_units * c.sb_read_cycles + c.exp_lane_cycles + c.sb_write_cycles; }
double to_ns(const PimController& c, double cycles) { return cycles * 1000.0 / c.clock_mhz; }

}  // namespace

double controller_rmsnorm_ns(const PimController& c, int64_t dim) {
    if (!c.present()) return 0;
    const double lanes = c.vector_lanes;
    // the MAC partial sums (one per lanes elements) reduced lanes at a time over the vector units,
    // one shared-buffer reduction, then the reciprocal root on a RISC-V core
    const double cycles = double(dim) / lanes / lanes / c.vector_units * vector_op_cycles(c) +
                          (c.sb_read_cycles + c.sb_write_cycles + 1.0) + c.rv_rmsnorm_cycles;
    return to_ns(c, cycles);
}

double controller_softmax_ns(const PimController& c, int64_t heads, int64_t context) {
    if (!c.present()) return 0;
    const double scores = double(heads) * double(context) / c.vector_lanes / c.vector_units;
    // per head: one reduction read, then the RISC-V step (one write per lane, the scalar work
    // spread over the cores, one read)
    const double per_head = c.sb_read_cycles + c.vector_lanes * c.sb_write_cycles +
                            c.rv_softmax_cycles / c.riscv_cores + c.sb_read_cycles;
    return to_ns(c, scores * (exp_op_cycles(c) + vector_op_cycles(c)) + double(heads) * per_head);
}

double controller_rotary_ns(const PimController& c, int64_t q_elems, int64_t k_elems) {
    if (!c.present()) return 0;
    return to_ns(c, double(q_elems + k_elems) * c.rv_rotary_cycles / c.riscv_cores);
}

}  // namespace duet::hw::pim
