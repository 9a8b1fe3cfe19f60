// `duet logits`: the logits of every prompt position, as raw little-endian f32, for
// comparison with an independent reference (tests/reference/).
#include <bit>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/dtype.h"
#include "core/error.h"
#include "runtime/engine.h"
#include "runtime/model.h"
#include "workload/ctx_check.h"

namespace duet::cli {
namespace {

struct LogitsArgs {
    std::string model_path, tokens, out_path, kv_type = "f32";
    int threads = 0;
};

std::vector<int32_t> parse_tokens(const std::string& s) {
    std::vector<int32_t> ids;
    size_t i = 0;
    while (i <= s.size()) {
        const size_t j = std::min(s.find(',', i), s.size());
        const std::string item = s.substr(i, j - i);
        size_t used = 0;
        long long v = 0;
        try {
            v = std::stoll(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (item.empty() || used != item.size() || v < 0 || v > INT32_MAX)
            fail("--tokens: '{}' is not a token id (allowed: comma-separated non-negative integers, e.g. 1,2,3)", item);
        ids.push_back(int32_t(v));
        i = j + 1;
    }
    return ids;
}

void run(const LogitsArgs& a) {
    static_assert(std::endian::native == std::endian::little, "logits files are little-endian f32");
    const std::vector<int32_t> ids = parse_tokens(a.tokens);
    const std::optional<DType> kv = workload::kv_type_from_flag(a.kv_type);
    auto model = runtime::Model::load(a.model_path);
    runtime::EngineOptions eo;
    eo.n_threads = a.threads;
    eo.kv_type = *kv;
    eo.n_ctx = int64_t(ids.size());
    runtime::Engine engine(model, eo);
    runtime::SequenceKv seq;
    runtime::SeqInput in{ids, &seq, true};
    runtime::ForwardOutput out;
    if (engine.forward({&in, 1}, out) != runtime::ForwardStatus::OK) fail("logits: KV cache too small (bug)");
    seq.release(engine.kv_cache());

    const std::string tmp = a.out_path + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) fail("-o {}: cannot open for writing", a.out_path);
    const size_t n = out.logits.size();
    const bool ok = std::fwrite(out.logits.data(), sizeof(float), n, f) == n;
    if (std::fclose(f) != 0 || !ok) {
        std::remove(tmp.c_str());
        fail("-o {}: write failed", a.out_path);
    }
    std::filesystem::rename(tmp, a.out_path);
    std::fprintf(stderr, "duet: wrote %zu x %lld logits to %s\n", ids.size(), (long long)out.n_vocab,
                 a.out_path.c_str());
}

}  // namespace

void register_logits(CLI::App& app) {
    auto args = std::make_shared<LogitsArgs>();
    auto* cmd = app.add_subcommand("logits", "Write the logits of every prompt position as little-endian f32 "
                                             "[n_tokens][n_vocab]");
    cmd->footer("Example:\n  duet logits -m build/tiny.gguf --tokens 1,15,27,3 -o build/tiny.logits.f32\n");
    cmd->add_option("-m,--model", args->model_path, help::kModelFile)->required();
    cmd->add_option("--tokens", args->tokens, "Comma-separated token ids, e.g. 1,2,3")->required();
    cmd->add_option("-o,--output", args->out_path, "Output file (raw f32, row-major [n_tokens][n_vocab])")
        ->required();
    number(cmd, "-t,--threads", args->threads, help::kEngineThreads, 0, int(kMaxThreads));
    text(cmd, "--kv-type", args->kv_type, help::kKvType)
        ->transform(dtype_alias("--kv-type", {"int8"}));
    cmd->callback([args] { run(*args); });
}

}  // namespace duet::cli
