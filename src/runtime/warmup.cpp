#include "runtime/warmup.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "core/log.h"
#include "core/memory_info.h"
#include "core/timer.h"
#include "format/mapped_file.h"

namespace duet::runtime {

namespace {
constexpr const char* kReadAtLoad = "read into memory at load";  // WarmupStats::method of a READ file
}  // namespace

std::string WarmupStats::format() const {
    std::string s = "warm-up: ";
    if (method == "skipped")
        s += "weights not pre-faulted (--no-warmup)";
    else if (method == kReadAtLoad)
        s += fmt::format("{:.1f} MiB {}", double(prefault_bytes) / (1 << 20), method);
    else
        s += fmt::format("{:.1f} MiB pre-faulted ({}) in {:.0f} ms", double(prefault_bytes) / (1 << 20), method,
                         prefault_ms);
    if (n_forwards > 0) s += fmt::format(", {} dummy forwards in {:.0f} ms", n_forwards, forwards_ms);
    return s;
}

namespace {
// "\rduet: <verb> <path>: NN% (x / y GB)" on stderr while a large file loads, when shown at all
// (a TTY, `progress`, at least kWarmupProgressMinBytes); the line is ended on destruction.
class ProgressBar {
public:
    ProgressBar(const char* verb, const std::string& path, uint64_t total, bool progress)
        : verb_(verb), path_(path), shown_(progress && total >= kWarmupProgressMinBytes && ::isatty(STDERR_FILENO)) {}
    ~ProgressBar() {
        if (last_pct_ >= 0) std::fprintf(stderr, "\n");
    }
    ProgressBar(const ProgressBar&) = delete;
    ProgressBar& operator=(const ProgressBar&) = delete;
    format::MappedFile::Progress callback() {
        if (!shown_) return nullptr;
        return [this](uint64_t done, uint64_t total) {
            const int pct = total ? int(done * 100 / total) : 100;
            if (pct == last_pct_) return;
            std::fprintf(stderr, "\rduet: %s %s: %3d%% (%.2f / %.2f GB)", verb_, path_.c_str(), pct, double(done) / 1e9,
                         double(total) / 1e9);
            last_pct_ = pct;
        };
    }

private:
    const char* verb_;
    std::string path_;
    bool shown_;
    int last_pct_ = -1;
};

uint64_t file_bytes(const std::string& path) {
    std::error_code ec;
    const auto n = std::filesystem::file_size(path, ec);
    return ec ? 0 : uint64_t(n);
}
}  // namespace

format::LoadMode load_mode_for(uint64_t file_bytes, uint64_t available_bytes, bool mmap, bool sliced) {
    if (mmap || sliced) return format::LoadMode::MMAP;
    const bool fits = available_bytes == 0 || file_bytes <= available_bytes / 4 * 3;
    return fits ? format::LoadMode::READ : format::LoadMode::MMAP;
}

std::shared_ptr<const Model> load_model(const std::string& path, const WarmupOptions& opts, bool sliced) {
    const uint64_t bytes = file_bytes(path), available = available_memory_bytes();
    const format::LoadMode mode = load_mode_for(bytes, available, opts.mmap, sliced);
    if (mode == format::LoadMode::MMAP && !opts.mmap && !sliced)
        DUET_LOG_WARN("{}: {:.2f} GB would leave less than a quarter of the {:.2f} GB of available memory: mapping "
                      "the file instead of reading it (as --mmap)",
                      path, double(bytes) / 1e9, double(available) / 1e9);
    ProgressBar bar("reading", path, mode == format::LoadMode::READ ? bytes : 0, opts.progress);
    return Model::load(path, mode, bar.callback());
}

WarmupStats prefault_weights(const Model& model, bool progress) {
    WarmupStats st;
    const format::MappedFile& map = model.file().mapping();
    const int64_t t0 = now_ns();
    format::MappedFile::PrefaultResult r;
    {
        ProgressBar bar("pre-faulting", model.path(), map.size_bytes(), progress);
        r = map.prefault(bar.callback());
    }
    st.prefault_ms = double(now_ns() - t0) / 1e6;
    st.prefault_bytes = r.method == format::MappedFile::PrefaultMethod::NONE ? map.size_bytes() : r.bytes;
    switch (r.method) {
        case format::MappedFile::PrefaultMethod::POPULATE_READ: st.method = "madvise populate"; break;
        case format::MappedFile::PrefaultMethod::TOUCH: st.method = "touch pass"; break;
        case format::MappedFile::PrefaultMethod::NONE: st.method = kReadAtLoad; break;
    }
    return st;
}

void warm_forwards(Engine& engine, int64_t n_rounds, WarmupStats& st, int64_t step_tokens) {
    if (n_rounds <= 0) return;
    if (step_tokens > 0) engine.reserve_tokens(step_tokens);
    const int64_t n_prefill = std::clamp<int64_t>(engine.n_ctx() - 1, 1, 16);
    const int64_t n_vocab = engine.hparams().n_vocab;
    std::vector<int32_t> prompt(static_cast<size_t>(n_prefill));
    for (int64_t i = 0; i < n_prefill; ++i) prompt[size_t(i)] = int32_t((7 * i + 3) % n_vocab);
    const int32_t next = int32_t(11 % n_vocab);
    const int64_t t0 = now_ns();
    ForwardOutput out;
    for (int64_t r = 0; r < n_rounds; ++r) {
        SequenceKv seq;
        try {
            SeqInput in{prompt, &seq, false};
            const bool ok = engine.forward({&in, 1}, out) == ForwardStatus::OK;
            if (ok) ++st.n_forwards;
            if (ok && engine.n_ctx() > n_prefill) {
                SeqInput dec{{&next, 1}, &seq, false};
                if (engine.forward({&dec, 1}, out) == ForwardStatus::OK) ++st.n_forwards;
            }
        } catch (...) {
            seq.release(engine.kv_cache());
            throw;
        }
        seq.release(engine.kv_cache());
    }
    st.forwards_ms += double(now_ns() - t0) / 1e6;
}

int64_t serve_warm_rounds(const WarmupOptions& opts) {
    return opts.prefault ? std::max(opts.n_rounds, kServeWarmRounds) : opts.n_rounds;
}

WarmupStats warm_up(const Model& model, Engine* engine, const WarmupOptions& opts) {
    WarmupStats st;
    // a file read into memory needs no pre-faulting: reported as such even with --no-warmup
    if (opts.prefault || !model.file().mapping().is_mapped()) st = prefault_weights(model, opts.progress);
    if (engine) warm_forwards(*engine, opts.n_rounds, st);
    return st;
}

}  // namespace duet::runtime
