#pragma once
// `--no-warmup` and `--warmup N`, the same on `duet run`, `serve` and `bench` (FILE mode):
// what runtime::warm_up does at load (runtime/warmup.h). Thread safety: build the CLI on the
// main thread.
#include <CLI/CLI.hpp>

#include "runtime/warmup.h"

namespace duet::cli {

// Largest --warmup: assumption, a few rounds prepare everything; more only delays the start.
inline constexpr int64_t kMaxWarmupRounds = 1000;

// serve_rounds: `duet serve` runs at least runtime::kServeWarmRounds rounds unless --no-warmup
// (runtime::serve_warm_rounds), and its --help says so.
void add_warmup_flags(CLI::App* cmd, runtime::WarmupOptions& opts, bool serve_rounds = false);

// Prints st.format() on stderr at info level (quiet unless the command shows timings).
void log_warmup(const runtime::WarmupStats& st);

}  // namespace duet::cli
