#pragma once
// FILE mode of `duet bench`: the engine runs the model for real (greedy), once reading the
// weights in place and once through the PIM layout (every matrix, of any dtype the kernels run,
// reordered into a PIM base and read in place through its block index:
// runtime/pim_weight_source.h), so a reorder or index bug changes the generated tokens. Each
// run's op trace then drives the simulation.
#include <string>
#include <vector>

#include "layout/pim_layout.h"
#include "runtime/generator.h"
#include "runtime/warmup.h"
#include "sim/op_trace.h"

namespace duet::workload {

struct FileRun {
    std::vector<int32_t> prompt, tokens;  // prompt ids and generated ids
    sim::OpTrace trace;
    runtime::GenerateStats stats;          // host-measured times
    int64_t pim_matrices = 0;              // matrices read through the PIM layout
    int64_t converted_matrices = 0;        // of which f32 held as f16 (f32_to_f16)
    int64_t int8_matrices = 0;             // of which Q8_0 held as int8 quants + scales (q8_0_as_int8)
    uint64_t int8_scale_bytes = 0;         // their f16 scale arrays
    // Teacher-forced logits [tokens][n_vocab]: row i is the distribution over token i of the
    // reference sequence (this run's own tokens unless run_file_engine got a reference).
    std::vector<float> logits;
    int64_t n_vocab = 0;
    runtime::WarmupStats warmup;           // what the load's warm-up did (not in the trace)
};

// Greedy generation of gen_len tokens after a synthetic prompt of seq_len ids (capped so that
// prompt + generation fit the model's training context). fuse: the engine runs the fused graph
// (graph::fuse_all: graph/fuse_matmuls.h, graph/fuse_rope_kv.h, graph/fuse_rmsnorm_matmul.h). warmup:
// runtime::warm_up after load, before the trace starts.
// f32_to_f16: the PIM layout holds f32 matrices as f16 (op_precision_converts_f32). reference:
// the tokens the logits are scored on (another run's, so two runs compare on the same inputs).
// q8_0_as_int8 ([pim] precision = int8): the PIM layout holds Q8_0 matrices as int8 quants with
// their block scales beside (runtime/pim_weight_source.h); a float matrix is then an error.
// Throws duet::Error.
FileRun run_file_engine(const std::string& path, int64_t seq_len, int64_t gen_len, bool pim_layout,
                        const layout::PimLayoutParams& params, const layout::MemoryOrganisation& org,
                        bool fuse = false, const runtime::WarmupOptions& warmup = {}, bool f32_to_f16 = false,
                        const std::vector<int32_t>* reference = nullptr, bool q8_0_as_int8 = false,
                        bool seq_len_from_flag = false);

// Whether settings ascend.op_precision_mode lets a matrix operator run an f32 matrix in f16 — CANN
// ATC --precision_mode: allow_fp32_to_fp16 (matrix operators use fp16), force_fp16, and
// allow_mix_precision (MatMul is on the built-in reduce list); force_fp32 and
// must_keep_origin_dtype keep f32 (hiascend.com CANN 8.0 atlasatcparam_16_0068).
bool op_precision_converts_f32(const std::string& mode);

}  // namespace duet::workload
