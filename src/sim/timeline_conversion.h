#pragma once
// The PIM->NZ conversion on an NPU's load path, block by block beside the cube (one
// converter per NPU). With c = conversion and p = compute time per block, N blocks, compute
// free at T0 and the converter able to start at S:
//   prefetch_depth D = 0: serial, end = max(T0, S + c) + p + (N - 1)(c + p)
//   D >= 1: end = max(T0 + N p, S + c + N p, S + N c + p), where up to D + 1 blocks of the
//   next matmul are converted ahead during the ops in between (attention, norms).
// Conversion is hidden when c <= p and visible when c > p. Pure arithmetic; no state but the
// converter's, passed in.
#include <cstdint>

namespace duet::sim {

struct ConverterState {
    double free_ns = 0;  // the converter finished its last block
    double gate_ns = 0;  // the first prefetch buffer of the next matmul frees up
};

struct ConvertedMatmul {
    double end_ns = 0;         // the matmul's compute ends
    double conv_start_ns = 0;  // the converter started on it (S)
    double conv_end_ns = 0;    // and finished its last block
};

// A matmul of `op_ns` compute that may start at `t0_ns`, whose weights take `to_nz_ns` to
// convert in `n_blocks` blocks; advances `conv`.
ConvertedMatmul convert_on_load_path(double t0_ns, double op_ns, double to_nz_ns, int64_t n_blocks,
                                     int64_t prefetch_depth, ConverterState& conv);

}  // namespace duet::sim
