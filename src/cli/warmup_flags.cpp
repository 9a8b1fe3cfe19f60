#include "cli/warmup_flags.h"

#include "cli/flags.h"
#include "core/log.h"

namespace duet::cli {

void add_warmup_flags(CLI::App* cmd, runtime::WarmupOptions& opts, bool serve_rounds) {
    cmd->add_flag("--mmap", opts.mmap,
                  "Map the model file instead of reading it into memory: pages load on first use and stay shared "
                  "with the page cache (less memory; decode read the weights 1.2-1.3x slower from the mapping on the "
                  "machine of docs/performance.md). Tensor/pipeline-parallel ranks, and files that would leave less "
                  "than a quarter of the available memory, are always mapped");
    // CLI11 flag "!": --no-warmup sets prefault = false
    cmd->add_flag("!--no-warmup", opts.prefault,
                  "Do not pre-fault a --mmap mapping at load (the first request then pays the page faults); read files need none");
    const std::string help =
        "Dummy prefill + decode rounds at load, so the first request finds scratch, threads and kernels ready";
    if (serve_rounds)  // serve runs at least its default rounds, none with --no-warmup
        number(cmd, "--warmup", opts.n_rounds, help, int64_t(0), kMaxWarmupRounds,
               DefaultFrom{std::to_string(runtime::kServeWarmRounds) + " at least, unless --no-warmup"});
    else
        number(cmd, "--warmup", opts.n_rounds, help, int64_t(0), kMaxWarmupRounds);
}

void log_warmup(const runtime::WarmupStats& st) { DUET_LOG_INFO("{}", st.format()); }

}  // namespace duet::cli
