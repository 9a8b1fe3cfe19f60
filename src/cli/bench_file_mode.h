#pragma once
// FILE mode of `duet bench`: the engine runs the model for real (greedy), once reading the
// weights in place and once through the PIM layout (every f16/bf16 matrix reordered into the
// PIM base; each matmul gathers its rows back through the block index), so a reorder or
// index bug changes the generated tokens. Each run's op trace then drives the simulation.
#include <string>
#include <vector>

#include "layout/pim_layout.h"
#include "runtime/generator.h"
#include "runtime/warmup.h"
#include "sim/op_trace.h"

namespace duet::cli {

struct FileRun {
    std::vector<int32_t> prompt, tokens;  // prompt ids and generated ids
    sim::OpTrace trace;
    runtime::GenerateStats stats;          // host-measured times
    int64_t pim_matrices = 0;              // matrices read through the PIM layout
    int64_t plain_matrices = 0;            // matrices left in place (dtype the layout does not take)
    runtime::WarmupStats warmup;           // what the load's warm-up did (not in the trace)
};

// Greedy generation of gen_len tokens after a synthetic prompt of seq_len ids (capped so that
// prompt + generation fit the model's training context). fuse: the engine runs the fused graph
// (graph/fuse_matmuls.h). warmup: runtime::warm_up after load, before the trace starts.
// Throws duet::Error.
FileRun run_file_engine(const std::string& path, int64_t seq_len, int64_t gen_len, bool pim_layout,
                        const layout::PimLayoutParams& params, const layout::MemoryOrganisation& org,
                        bool fuse = false, const runtime::WarmupOptions& warmup = {});

}  // namespace duet::cli
