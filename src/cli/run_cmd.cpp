// `duet run`: generate text from a GGUF model, streaming it to stdout; timings on stderr.
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/warmup_flags.h"
#include "config/runtime_knobs.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/file_read.h"
#include "core/memory_info.h"
#include "model/chat_template.h"
#include "model/grammar/json_schema.h"
#include "model/grammar/token_table.h"
#include "parallel/communicator.h"
#include "runtime/cpu_affinity.h"
#include "runtime/engine.h"
#include "runtime/generator.h"
#include "runtime/model.h"
#include "runtime/tp_rank.h"
#include "runtime/trace_csv.h"
#include "workload/ctx_check.h"
#include "workload/knob_effects.h"

namespace duet::cli {
namespace {

struct RunArgs {
    std::string model_path, prompt, chat_template, system, kv_type = "f16", op_trace;
    int64_t n_predict = 128, ctx = 0;
    bool chat = false, echo = false, no_timings = false, fuse = false;
    bool parse_special = false;   // control-token text in -p/--system becomes control tokens
    bool verbose_prompt = false;  // print the prompt's token ids
    int threads = 0, tp = 1, pp = 1;
    int64_t seed = -1;
    model::SamplerParams sampling;
    std::string json_schema, grammar;  // constrained output (files)
    runtime::WarmupOptions warmup;
};

std::string read_text_file(const std::string& path, const char* flag) { return read_small_file(path, flag); }

// --json-schema / --grammar: the grammar the output must match (nullptr without either).
std::shared_ptr<const model::grammar::Grammar> output_grammar(const RunArgs& a) {
    if (!a.json_schema.empty() && !a.grammar.empty()) fail("--json-schema and --grammar exclude each other");
    if (!a.grammar.empty()) return model::grammar::Grammar::parse(read_text_file(a.grammar, "--grammar"), a.grammar);
    if (a.json_schema.empty()) return nullptr;
    // linear-time, depth-limited parse (ordered_json::parse is quadratic in depth and keys)
    const auto schema = model::grammar::parse_json_schema_text(read_text_file(a.json_schema, "--json-schema"),
                                                               "--json-schema " + a.json_schema);
    return model::grammar::Grammar::parse(model::grammar::json_schema_to_grammar(schema, a.json_schema), a.json_schema);
}

model::ChatTemplate chat_template_of(const runtime::Model& m, const RunArgs& a) {
    if (!a.chat_template.empty()) return chat_template_flag(a.chat_template);
    if (m.chat_template()) return *m.chat_template();
    fail("{}: no recognised tokenizer.chat_template; choose one with --chat-template (allowed: llama2, llama3, "
         "chatml, mistral)",
         m.path());
}

// The prompt's tokens. Control tokens come only from the chat template, as on the server
// (docs/server.md, "Special tokens"): control-token text in -p or --system ("<|im_start|>",
// "</s>") is spelled out as text unless --parse-special. With --chat the prompt is rendered
// twice, from the flags' text and from the same text defused, and only the control-token texts
// both renderings have at one offset become control tokens (Tokenizer::encode_chat).
std::vector<int32_t> prompt_tokens(const runtime::Model& m, const RunArgs& a) {
    const model::Tokenizer& tok = m.tokenizer();
    if (!a.chat) return tok.encode(a.prompt, tok.add_bos_default() && tok.bos() >= 0, a.parse_special);
    const model::ChatTemplate tmpl = chat_template_of(m, a);
    const std::string bos = tok.bos() >= 0 ? tok.token_text(tok.bos()) : "";
    const std::string eos = tok.eos() >= 0 ? tok.token_text(tok.eos()) : "";
    auto render = [&](const std::function<std::string(const std::string&)>& text_of) {
        std::vector<model::ChatMessage> msgs;
        if (!a.system.empty()) msgs.push_back({"system", text_of(a.system)});
        msgs.push_back({"user", text_of(a.prompt)});
        return model::render_chat(tmpl, msgs, true, bos, eos);  // BOS written by the template when wanted
    };
    const std::string text = render([](const std::string& s) { return s; });
    if (a.parse_special) return tok.encode(text, false, true);
    return tok.encode_chat(text, render([&](const std::string& s) { return tok.defuse_special(s); }), false);
}

void run(const RunArgs& a) {
    if (!(a.sampling.top_p > 0))  // the sampler's own check would not name the flag
        fail("--top-p = {} is not allowed (allowed: above 0 and at most 1; 1 = off)", a.sampling.top_p);
    if (a.prompt.empty()) fail("-p/--prompt is empty (allowed: any non-empty text)");
    if (!a.chat && (!a.system.empty() || !a.chat_template.empty()))
        fail("--system and --chat-template need --chat");
    const std::optional<DType> kv = workload::kv_type_from_flag(a.kv_type);
    model::SamplerParams sp = a.sampling;
    sp.seed = a.seed >= 0 ? uint64_t(a.seed) : std::random_device{}();
    model::validate(sp);
    const auto grammar = output_grammar(a);  // before loading: a bad file fails fast
    const auto comm = parallel::make_world_communicator();
    runtime::check_parallel_world(a.tp, a.pp, *comm);

    auto model = runtime::load_model(a.model_path, a.warmup, a.tp * a.pp > 1);
    workload::check_ctx(model->hparams(), a.ctx, 1, *kv, "--ctx", available_memory_bytes());  // before the KV allocation
    if (grammar) {
        sp.grammar = grammar;
        sp.grammar_tokens = model::grammar::TokenTable::from_tokenizer(model->tokenizer());
        sp.max_tokens = a.n_predict > 0 ? a.n_predict : 0;  // the grammar closes within -n (docs/grammar.md)
    }
    runtime::EngineOptions eo;
    eo.n_threads = a.threads;
    eo.n_ctx = a.ctx;
    eo.kv_type = *kv;
    eo.fuse = a.fuse;
    const config::RuntimeKnobs knobs = config::read_runtime_knobs(config::runtime_knob_env());  // run has no settings
    workload::apply_engine_knobs(knobs, eo);
    runtime::RankEngine re = runtime::make_rank_engine(model, *comm, a.tp, a.pp, eo);
    runtime::Engine& engine = *re.engine;
    const bool pinned = knobs.cpu_affinity != 0;
    if (pinned) runtime::pin_pool_threads(engine.pool());  // CPU_AFFINITY_CONF
    const runtime::WarmupStats warm = runtime::warm_up_rank(*model, re, a.warmup);  // before the trace: not recorded
    if (!re.leader()) {  // ranks > 0 run rank 0's forwards and print nothing
        re.tp->follow(engine);
        return;
    }
    sim::OpTrace trace;
    if (!a.op_trace.empty()) engine.set_trace(&trace);
    runtime::Generator gen(engine);

    runtime::GenerateOptions go;
    go.n_predict = a.n_predict;
    go.sampling = sp;
    const std::vector<int32_t> prompt = prompt_tokens(*model, a);
    if (a.verbose_prompt) {
        std::string ids;
        for (int32_t t : prompt) ids += fmt::format(" {}", t);
        std::fprintf(stderr, "duet: prompt: %zu tokens:%s\n", prompt.size(), ids.c_str());
    }
    if (a.echo) {
        std::fwrite(a.prompt.data(), 1, a.prompt.size(), stdout);
        std::fflush(stdout);
    }
    runtime::GenerateStats st;
    gen.generate_tokens(prompt, go, [](std::string_view piece) {
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
    }, &st);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    if (re.tp) re.tp->finish();
    if (!a.op_trace.empty()) runtime::write_op_trace_csv(trace, a.op_trace);
    const std::string tp_note =
        !re.tp ? ""
        : a.pp > 1
            ? fmt::format(", pp {} over {} (rank 0's stage: {:.1f} MiB of weights)", a.pp, comm->kind(),
                          double(re.tp->shard_bytes()) / (1 << 20))
            : fmt::format(", tp {} over {} ({:.1f} MiB of weights per rank; rank 0: {} all-reduces, {:.1f} ms)", a.tp,
                          comm->kind(), double(re.tp->shard_bytes()) / (1 << 20), re.tp->n_all_reduce(),
                          re.tp->all_reduce_ms());
    if (!a.no_timings)
        std::fprintf(stderr, "\nduet: %s, %d threads%s, kv %s, seed %llu\n%s", model->path().c_str(),
                     engine.pool().size(), tp_note.c_str(), a.kv_type.c_str(), (unsigned long long)sp.seed,
                     st.format().c_str());
    if (!a.no_timings) std::fprintf(stderr, "%s%s\n", warm.format().c_str(), pinned ? "; threads pinned (CPU_AFFINITY_CONF)" : "");
}

}  // namespace

void register_run(CLI::App& app) {
    auto args = std::make_shared<RunArgs>();
    auto* cmd = app.add_subcommand("run", "Generate text from a GGUF model (streams to stdout, timings on stderr)");
    cmd->footer(
        "Examples:\n"
        "  duet gen-model --arch tiny-llama --seed 42 -o build/tiny.gguf\n"
        "  duet run -m build/tiny.gguf -p \"Once upon a time\" -n 32 --temp 0\n"
        "  duet run -m qwen.gguf --chat --system \"Be brief.\" -p \"What is PIM?\" --seed 1\n"
        "  duet run -m qwen.gguf --parse-special -p \"$(cat turns.txt)\"   # control tokens written by hand\n"
        "  duet run -m build/tiny.gguf -p \"Hi\" -n 4 --temp 0 --op-trace ops.csv\n"
        "  duet run -m build/tiny.gguf -p \"JSON:\" -n 200 --json-schema person.schema.json\n"
        "  mpirun -np 2 duet run -m build/tiny.gguf -p \"Hi\" -n 16 --temp 0 --tp 2 --threads 1\n"
        "  mpirun -np 2 duet run -m build/tiny.gguf -p \"Hi\" -n 16 --temp 0 --pp 2 --threads 1\n");
    cmd->add_option("-m,--model", args->model_path, help::kModelFile)->required();
    cmd->add_option("-p,--prompt", args->prompt, "Prompt text")->required();
    number(cmd, "-n,--n-predict", args->n_predict, "Tokens to generate at most (-1: until end of text)", int64_t(-1),
           kMaxTokens);
    cmd->add_flag("--chat", args->chat, "Wrap the prompt in the model's chat template");
    text(cmd, "--chat-template", args->chat_template, help::kChatTemplate,
         DefaultFrom{"from the file"});
    cmd->add_option("--system", args->system, "System message (with --chat)");
    cmd->add_flag("--parse-special", args->parse_special,
                  "Read control-token text in -p and --system (<|im_start|>, </s>, [INST] ...) as control tokens; "
                  "without it that text stays text and only the chat template writes control tokens");
    cmd->add_flag("--verbose-prompt", args->verbose_prompt, "Print the prompt's token ids on stderr before generating");
    number(cmd, "--temp", args->sampling.temperature, "Temperature (0 = greedy)", 0.0f, 100.0f);
    number(cmd, "--top-k", args->sampling.top_k, "Top-k (0 = off)", int32_t(0), std::numeric_limits<int32_t>::max());
    number(cmd, "--top-p", args->sampling.top_p, "Top-p (1 = off; must be above 0)", 0.0f, 1.0f);
    number(cmd, "--min-p", args->sampling.min_p, "Min-p (0 = off)", 0.0f, 1.0f);
    number(cmd, "--repeat-penalty", args->sampling.repeat_penalty, "Repetition penalty (1 = off; must be above 0)",
           0.0f, 100.0f);
    number(cmd, "--repeat-last-n", args->sampling.repeat_last_n, "Tokens the penalties look back (-1 = all)",
           int32_t(-1), std::numeric_limits<int32_t>::max());
    number(cmd, "--frequency-penalty", args->sampling.frequency_penalty, "Frequency penalty", -2.0f, 2.0f);
    number(cmd, "--presence-penalty", args->sampling.presence_penalty, "Presence penalty", -2.0f, 2.0f);
    number(cmd, "--seed", args->seed, "Random seed (-1: random); the same seed gives the same text", int64_t(-1),
           std::numeric_limits<int64_t>::max());
    number(cmd, "-t,--threads", args->threads, help::kEngineThreads, 0, int(kMaxThreads));
    number(cmd, "-c,--ctx", args->ctx,
           help::kCtx,
           int64_t(0), kMaxCtx);
    text(cmd, "--kv-type", args->kv_type, help::kKvType)->transform(dtype_alias("--kv-type", {"int8"}));
    number(cmd, "--tp", args->tp,
           "Tensor-parallel ranks: each loads its slice of every layer; run as mpirun -np N duet run --tp N "
           "(docs/scale-out.md)",
           1, 1024);
    number(cmd, "--pp", args->pp,
           "Pipeline stages: rank s runs and reads only its layers; run as mpirun -np M duet run --pp M; not with "
           "--tp > 1 (docs/scale-out.md)",
           1, 1024);
    cmd->add_flag("--fuse", args->fuse, help::kFuse);
    add_warmup_flags(cmd, args->warmup);
    cmd->add_flag("--echo", args->echo, "Print the prompt before the generated text");
    cmd->add_flag("--no-timings", args->no_timings, "Do not print the timing block on stderr");
    cmd->add_option("--op-trace", args->op_trace,
                    "Write every operator the engine ran (kind, shapes, bytes, FLOPs) to this CSV file");
    cmd->add_option("--json-schema", args->json_schema,
                    "Constrain the output to JSON valid against this JSON Schema file (docs/grammar.md)");
    cmd->add_option("--grammar", args->grammar, "Constrain the output to this grammar file (docs/grammar.md)");
    cmd->callback([args] { run(*args); });
}

}  // namespace duet::cli
