// `duet gen-model`: writes a synthetic GGUF model of a preset architecture.
#include <sys/statvfs.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>

#include <cstdio>
#include <string>

#include <limits>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/error.h"
#include "core/timer.h"
#include "model/arch_presets.h"
#include "model/synthetic_writer.h"

namespace duet::cli {
namespace {

// The temp file being written, removed by SIGINT/SIGTERM before the default action ends the
// process (unlink is async-signal-safe); the writer itself removes it on errors.
char g_tmp_path[4096] = {0};

void remove_tmp_and_die(int sig) {
    if (g_tmp_path[0]) ::unlink(g_tmp_path);
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

// Free bytes of the file system that will hold `path`; 0 when unknown.
uint64_t free_bytes_for(const std::string& path) {
    std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (dir.empty()) dir = ".";
    struct statvfs v {};
    if (::statvfs(dir.c_str(), &v) != 0) return 0;
    return uint64_t(v.f_bavail) * uint64_t(v.f_frsize);
}

struct GenModelArgs {
    std::string arch;
    std::string dtype = "f32";
    uint64_t seed = 0;
    std::string out;
    int64_t layers = 0;
    int threads = 0;
    bool list = false;
};

void list_presets() {
    std::printf("%-13s %-6s %-4s %7s %6s %5s %5s %4s %10s  %s\n", "preset", "arch", "tok", "n_vocab", "n_embd", "layer",
                "head", "kv", "params", "description");
    for (const auto& p : model::arch_presets()) {
        const auto& h = p.hparams;
        std::printf("%-13s %-6s %-4s %7lld %6lld %5lld %5lld %4lld %9.4gM  %s\n", p.name.c_str(), h.arch_name.c_str(),
                    p.tokenizer == model::TokenizerKind::SPM ? "spm" : "bpe", (long long)h.n_vocab, (long long)h.n_embd,
                    (long long)h.n_layer, (long long)h.n_head, (long long)h.n_head_kv, double(h.n_params()) / 1e6,
                    p.description.c_str());
    }
}

void run(const GenModelArgs& a) {
    if (a.list) {
        list_presets();
        return;
    }
    if (a.arch.empty()) fail("--arch is required (known: {})", model::arch_preset_list(true));
    if (a.out.empty()) fail("-o FILE.gguf is required");
    const model::ArchPreset* found = model::find_arch_preset_info(a.arch);
    if (!found) fail("unknown --arch '{}' (known: {})", a.arch, model::arch_preset_list(true));
    const model::ArchPreset& preset = *found;
    model::SyntheticOptions opt;
    opt.dtype = a.dtype;
    opt.seed = a.seed;
    opt.n_layer = a.layers;
    opt.n_threads = a.threads;

    const bool tty = ::isatty(STDERR_FILENO);
    int last_pct = -1;
    const int64_t t0_ns = now_ns();
    auto progress = [&](uint64_t done, uint64_t total) {
        const int pct = total ? int(done * 100 / total) : 100;
        if (pct == last_pct) return;
        if (tty) {
            std::fprintf(stderr, "\rwriting %s: %3d%% (%.2f / %.2f GB)", a.out.c_str(), pct, double(done) / 1e9,
                         double(total) / 1e9);
        } else if (total >= (uint64_t(256) << 20) && pct % 10 == 0) {
            std::fprintf(stderr, "writing %s: %d%% (%.2f / %.2f GB)\n", a.out.c_str(), pct, double(done) / 1e9,
                         double(total) / 1e9);
        }
        last_pct = pct;
    };
    bool space_checked = false;
    auto checked_progress = [&](uint64_t done, uint64_t total) {
        if (!space_checked) {  // the first call, before the file is created: total is the data size
            space_checked = true;
            const uint64_t free_b = free_bytes_for(a.out);
            if (free_b > 0 && total > done && total - done > free_b)
                fail("-o {}: the model needs {:.3f} GB more but its file system has {:.3f} GB free (allowed: a smaller "
                     "--dtype or --layers, or another -o)",
                     a.out, double(total - done) / 1e9, double(free_b) / 1e9);
        }
        progress(done, total);
    };
    const std::string tmp = a.out + ".tmp";  // the writer's temp name (format/gguf_writer.h)
    if (tmp.size() < sizeof g_tmp_path) std::memcpy(g_tmp_path, tmp.c_str(), tmp.size() + 1);
    auto old_int = std::signal(SIGINT, remove_tmp_and_die);
    auto old_term = std::signal(SIGTERM, remove_tmp_and_die);
    struct Restore {
        decltype(old_int) i, t;
        ~Restore() {
            std::signal(SIGINT, i);
            std::signal(SIGTERM, t);
            g_tmp_path[0] = 0;
        }
    } restore{old_int, old_term};
    model::SyntheticSummary s = model::write_synthetic_model(a.out, preset, opt, checked_progress);
    if (tty && last_pct >= 0) std::fprintf(stderr, "\n");
    const auto& h = s.hparams;
    std::printf(
        "wrote %s: preset %s (arch %s), %lld layers, n_embd %lld, n_vocab %lld, %.4g M params, dtype %s, "
        "seed %llu, %.4g MB in %.1f s\n",
        a.out.c_str(), preset.name.c_str(), h.arch_name.c_str(), (long long)h.n_layer, (long long)h.n_embd,
        (long long)h.n_vocab, double(s.n_params) / 1e6, a.dtype.c_str(), (unsigned long long)a.seed,
        double(s.file_bytes) / 1e6, double(now_ns() - t0_ns) / 1e9);
    if (s.n_fallback_tensors > 0)
        std::printf("note: %d tensors have rows the %s block size does not divide; they are stored as q8_0/f16\n",
                    s.n_fallback_tensors, a.dtype.c_str());
}

}  // namespace

void register_gen_model(CLI::App& app) {
    auto args = std::make_shared<GenModelArgs>();
    auto* cmd =
        app.add_subcommand("gen-model", "Write a synthetic GGUF model (seeded random weights, working tokenizer)");
    cmd->footer(
        "Examples:\n"
        "  duet gen-model --arch tiny-llama --dtype f16 --seed 1 -o tiny.gguf\n"
        "  duet gen-model --arch llama2-7b --dtype q4_0 --layers 2 -o l2-2layers.gguf\n"
        "  duet gen-model --list\n"
        "Presets: " +
        model::arch_preset_list(true) +
        "\n"
        "Same preset, dtype and seed give a byte-identical file.");
    cmd->add_option("--arch", args->arch, "Architecture preset (see --list); required unless --list");
    text(cmd, "--dtype", args->dtype, "Weight type: " + model::synthetic_dtype_names())
        ->transform(dtype_alias("--dtype"));
    number(cmd, "--seed", args->seed, "Random seed", uint64_t(0), std::numeric_limits<uint64_t>::max());
    cmd->add_option("-o,--output", args->out, "Output file (written to FILE.tmp, then renamed); required unless --list");
    number(cmd, "--layers", args->layers, "Override the preset's layer count", int64_t(1), int64_t(4096),
           DefaultFrom{"the preset's"});
    number(cmd, "--threads", args->threads, "Threads generating weights (0: all hardware threads)", 0,
           int(kMaxThreads));
    cmd->add_flag("--list", args->list, "List the presets and exit");
    cmd->callback([args] { run(*args); });
}

}  // namespace duet::cli
