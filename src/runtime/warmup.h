#pragma once
// Warm-up at load (issue 13.4, issue 15 "plan cache and warm-up"): the first request's TTFT
// should equal a warm one's. Two parts, both run before the first request:
//   prefault_weights  every page of the model file is read and mapped into the process
//                     (MappedFile::prefault), so the first forward pays no page faults;
//                     `duet run/serve/bench --no-warmup` skips it.
//   warm_forwards     N rounds of dummy forwards (`--warmup N`), each a short prefill and one
//                     decode step on a scratch sequence released afterwards, so that the
//                     scratch arena, the thread pool's threads and the kernels' first-use paths
//                     (GEMM and GEMV) are prepared before a request arrives.
// Thread safety: prefault_weights any thread; warm_forwards on the engine's thread (the
// engine has no other user while it runs).
#include <cstdint>
#include <string>

#include "runtime/engine.h"
#include "runtime/model.h"

namespace duet::runtime {

struct WarmupOptions {
    bool mmap = false;        // --mmap: map the model file (format::LoadMode::MMAP), else read it into memory
    bool prefault = true;     // false: --no-warmup
    int64_t n_rounds = 0;     // --warmup N: dummy prefill + decode rounds
    bool progress = true;     // a progress bar on stderr when it is a TTY and the file is large
};

struct WarmupStats {
    std::string method = "skipped";  // "madvise populate", "touch pass", "read into memory at load", "skipped"
    uint64_t prefault_bytes = 0;
    double prefault_ms = 0;
    int64_t n_forwards = 0;          // dummy forwards run
    double forwards_ms = 0;
    std::string format() const;      // one line, e.g. "warm-up: 512.0 MiB pre-faulted (madvise populate) in 80 ms"
};

// Files at least this large show a progress bar on a TTY.
inline constexpr uint64_t kWarmupProgressMinBytes = uint64_t(256) << 20;

// Loads the model as the CLI commands do: read into memory (format::LoadMode::READ), or mapped
// with opts.mmap or when `sliced` (a tensor/pipeline-parallel rank, which keeps only its slices
// of the weights: a whole private copy per rank would multiply the memory); a progress bar while
// a large file is read (opts.progress, on a TTY).
// A file that would leave less than a quarter of the available memory (MemAvailable) is mapped
// too, with a warning: a copy would not fit, a mapping pages from the file.
std::shared_ptr<const Model> load_model(const std::string& path, const WarmupOptions& opts, bool sliced = false);
// load_model's choice for a file of file_bytes with available_bytes available (0: unknown).
format::LoadMode load_mode_for(uint64_t file_bytes, uint64_t available_bytes, bool mmap, bool sliced);

// Reads every page of the model's file into this process's page tables (a no-op, method "read
// into memory at load", when the file was read rather than mapped).
WarmupStats prefault_weights(const Model& model, bool progress);

// Runs n_rounds rounds of one prefill forward (min(16, n_ctx - 1) tokens) and one decode forward
// on a fresh sequence, then releases its KV blocks; adds to st. No-op for n_rounds <= 0. A KV
// pool too small for the round is skipped (the engine stays usable). Throws what forward throws.
// step_tokens > 0: first sizes the engine's activation scratch for steps of that many tokens
// (Engine::reserve_tokens; a server's largest step: its prompt token budget or its decode slots).
void warm_forwards(Engine& engine, int64_t n_rounds, WarmupStats& st, int64_t step_tokens = 0);

// The dummy rounds `duet serve` runs on its batcher's engine thread: --warmup N, and at least
// kServeWarmRounds while the warm-up is on (not --no-warmup). Pre-faulting alone left the first
// request's TTFT 3x a warm one's on a 2.2 GB f16 model, one round 1.5x, three rounds within
// 10 % (measured with bench_server on the 2-vCPU KVM guest, bench/results/): the engine thread's kernel
// scratch, the arena and, on this (shadow-paged) VM, the first CPU accesses of each weight page
// are paid by the first forwards. Three rounds cost ~0.4 s at start on that model.
inline constexpr int64_t kServeWarmRounds = 3;
int64_t serve_warm_rounds(const WarmupOptions& opts);

// Both, as the CLI commands run them after loading (prefault first).
WarmupStats warm_up(const Model& model, Engine* engine, const WarmupOptions& opts);

}  // namespace duet::runtime
