#pragma once
// The flags of `duet bench --workload serving` (docs/serving.md); the run is
// workload::run_serving_bench. bench_cmd.cpp registers them beside the other bench flags.
#include <CLI/CLI.hpp>

#include "workload/serving_bench.h"

namespace duet::cli {

void add_serving_bench_flags(CLI::App* bench, workload::ServingLoad& a);

}  // namespace duet::cli
