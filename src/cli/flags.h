#pragma once
// One way to declare a command-line flag, shared by every `duet` subcommand, so that a numeric
// flag cannot come without its allowed range and a default is shown the same way everywhere.
//
//   number()   a numeric option with [lo, hi]: the raw text is checked before conversion, so
//              "-5" for an unsigned, "1e30", "nan" or a value past the type's range are usage
//              errors: "duet: error: --bytes: -5 is out of range (allowed: 1 to 2^40)", exit 2.
//              The help line shows the range and the default the one way CLI11 shows
//              defaults: "INT:in 0 to 256=0"; a default computed at run time shows where it
//              comes from ("=settings runtime.seq_len"), never "(default ...)" in the text.
//   alias()    a deprecated spelling of a flag (still accepted, warns on use, named in the canonical flag's help).
//   dtype_alias()  another spelling of a dtype value ("fp16" for "f16"), read as the name.
//
// Thread safety: call while building the CLI (main thread).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <vector>
#include <string>
#include <type_traits>

#include "model/chat_template.h"

namespace duet::cli {

// Text of a range bound as the help and errors show it (powers of two >= 2^20 as 2^N).
std::string bound_text(long double v, bool integral);

// Validator: the argument is a number of the option's kind (integral or not) within [lo, hi].
CLI::Validator range_check(long double lo, long double hi, bool integral);

// Marker: the option has no default value worth showing (e.g. "from settings"); pass the text
// that explains where the value comes from instead.
struct DefaultFrom {
    std::string text;
};

template <class T>
CLI::Option* number(CLI::App* app, const std::string& names, T& target, const std::string& help, T lo, T hi) {
    static_assert(std::is_arithmetic_v<T>, "number() is for numeric options");
    return app->add_option(names, target, help)
        ->check(range_check(static_cast<long double>(lo), static_cast<long double>(hi), std::is_integral_v<T>))
        ->capture_default_str();
}

// Same, with a default computed at run time (shown as =text).
template <class T>
CLI::Option* number(CLI::App* app, const std::string& names, T& target, const std::string& help, T lo, T hi,
                    const DefaultFrom& dflt) {
    return number(app, names, target, help, lo, hi)->default_str(dflt.text);
}

// A string option with its default shown as =value (or =text for a computed default).
CLI::Option* text(CLI::App* app, const std::string& names, std::string& target, const std::string& help);
CLI::Option* text(CLI::App* app, const std::string& names, std::string& target, const std::string& help,
                  const DefaultFrom& dflt);

// A hidden deprecated flag name: sets `target` like `canonical` does and warns on use; the
// canonical flag (declared before) gets " (OLD: deprecated alias)" at the end of its help.
CLI::Option* alias(CLI::App* app, const std::string& old_name, const std::string& canonical, std::string& target);

// Reads another spelling of a dtype (core/dtype.h dtype_aliases(): fp16, float16 -> f16, ...) as
// its name, with a warning on stderr; other values, and those in `keep`, pass unchanged.
CLI::Validator dtype_alias(const std::string& flag, std::vector<std::string> keep = {});

// Default --settings and --config: settings.json and config.toml of the build's configs/ folder
// (core/build_paths.h).
std::string default_settings_path();
std::string default_config_path();

// The help text of every flag that means one thing in each subcommand that has it, written
// once here so that every --help says the same (tests/cli/cli_style_test.cpp compares them; the
// flags whose meaning is the subcommand's own are listed there with the reason).
namespace help {
inline constexpr const char* kModelFile = "GGUF model file";
inline constexpr const char* kModelAny = "Architecture preset, Hugging Face config.json (or its directory) or GGUF file";
inline constexpr const char* kSettings = "settings.json (runtime settings; docs/configuration.md)";
inline constexpr const char* kConfig = "config.toml (the cooperation knobs; docs/configuration.md)";
inline constexpr const char* kKvType = "KV cache type: f16, f32 or int8 (32-value blocks with an f16 scale; docs/engine.md)";
inline constexpr const char* kChatTemplate = "Chat template: llama2, llama3, chatml, mistral";
inline constexpr const char* kNpuDispatch =
    "NPU host launch mode: eager, queue0, queue1, queue2 (TASK_QUEUE_ENABLE levels) or graph";
inline constexpr const char* kPim = "PIM preset (configs/hw/)";
inline constexpr const char* kChannels = "Channels (pseudo channels for HBM); 0 = the preset's device";
inline constexpr const char* kStacks =
    "Stacks (HBM) or packages: channels = stacks x the preset's per-stack channels; 0 = the preset's";
inline constexpr const char* kMaxMemoryMb =
    "Memory the run may hold, estimated before it starts (more is refused; docs/tune.md \"Memory\")";
inline constexpr const char* kGenLen = "Generated tokens (the first from prefill)";
inline constexpr const char* kCtx =
    "Context per sequence in tokens (0: min(trained context, 4096)); checked against memory before allocation";
inline constexpr const char* kPimDtype = "Operand type: f16, bf16 or i8 (fp16, int8: deprecated spellings)";
inline constexpr const char* kEngineThreads = "Engine threads (0: all hardware threads)";
inline constexpr const char* kHostProfile =
    "Host profile: this CPU running duet's engine (`duet calibrate --host-profile FILE -m MODEL` writes it; "
    "`duet bench --workload serving --host-profile FILE` models it; docs/serving.md \"The host twin\")";
inline constexpr const char* kFuse =
    "Q/K/V and gate/up as one matmul each, RoPE with the KV write, RMSNorm in the next matmul's input "
    "quantisation (graph passes: the same tokens, other times)";
}  // namespace help

// Largest values accepted where nothing smaller is natural (documented per flag).
inline constexpr int64_t kMaxThreads = 256;  // assumption: more threads than any host duet targets has cores
inline constexpr int64_t kMaxCtx = (int64_t(1) << 31) - 1;  // positions are int32 in kernels; memory decides below
inline constexpr int64_t kMaxTokens = int64_t(1) << 24;  // assumption: 16 M tokens, far past any trained context
inline constexpr int64_t kMaxSeed = (int64_t(1) << 32) - 1;  // seeds are 32-bit (std::mt19937)

// --chat-template NAME -> the template; duet::Error naming the flag and the allowed names.
model::ChatTemplate chat_template_flag(const std::string& name);

}  // namespace duet::cli
