// `duet bench`: its flags, and one call per --workload: the policy comparison
// (workload/generation_bench.h), the agent ablation (workload/agent_bench.h) or the serving
// workload (workload/serving_bench.h).
#include <memory>

#include "cli/bench_agent.h"
#include "cli/bench_serving.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/warmup_flags.h"
#include "core/error.h"
#include "tune/memory_estimate.h"
#include "workload/agent_bench.h"
#include "workload/generation_bench.h"
#include "workload/serving_bench.h"

namespace duet::cli {

namespace {

struct BenchArgs {
    workload::GenerationBenchOptions gen;  // gen.bench: the flags every --workload reads
    int64_t max_memory_mb = int64_t(tune::kDefaultMemoryCapBytes >> 20);  // trace-only plans (tune/memory_estimate.h)
    bool no_verdict_exit = false;
    AgentBenchArgs agent;           // --workload agent (cli/bench_agent.h)
    workload::ServingLoad serving;  // --workload serving (cli/bench_serving.h)
};

// --ep / --expert-skew / --routing-stats are modelled by the trace-only comparison and the serving simulator.
void check_expert_flags_unused(const workload::BenchOptions& b, const std::string& workload) {
    if (b.ep > 1) fail("--ep {} with --workload {}: expert parallelism is modelled by the trace-only comparison and "
                       "--workload serving (allowed: --ep 1)", b.ep, workload);
    if (b.expert_skew >= 0 || !b.routing_stats.empty())
        fail("{} with --workload {}: the routing is modelled by the trace-only comparison and --workload serving "
             "(allowed: no --workload, or --workload serving)",
             b.expert_skew >= 0 ? "--expert-skew" : "--routing-stats", workload);
}

workload::AgentBenchOptions agent_options(const BenchArgs& a) {
    const workload::BenchOptions& b = a.gen.bench;
    workload::AgentBenchOptions o;
    o.model = b.model;
    o.settings_path = b.settings_path;
    o.config_path = b.config_path;
    o.dispatch = b.dispatch;
    o.report = b.report;
    o.svg = b.svg;
    o.workload_file = a.agent.workload_file;
    o.turns = a.agent.turns;
    o.threads = a.agent.threads;
    o.max_ctx = a.agent.max_ctx;
    return o;
}

// The generation comparison's options beyond its flags: what the command line says of --model
// and --log-level, and the memory cap of its plans (--max-memory-mb).
workload::GenerationBenchOptions generation_options(const BenchArgs& a, const CLI::App& root) {
    workload::GenerationBenchOptions o = a.gen;
    o.model_given = root.get_subcommand("bench")->get_option("--model")->count() > 0;
    o.log_level_from_settings = root.get_option("--log-level")->count() == 0;
    const uint64_t cap_bytes = uint64_t(a.max_memory_mb) << 20;
    o.check_plan_memory = [cap_bytes](const std::string& model, const std::string& dtype, int64_t gen_len) {
        tune::check_memory(tune::plan_memory(model, dtype, gen_len), cap_bytes, "this bench of " + model,
                           "duet bench --max-memory-mb", "a smaller --gen-len");
    };
    return o;
}

// Exit status: 0 all verdicts met, 3 any NOT MET (unless --no-verdict-exit), 2 errors (thrown).
void exit_on_verdicts(bool all_met, bool no_verdict_exit) {
    if (!all_met && !no_verdict_exit) throw ExitStatus{3};
}

void run_bench(const BenchArgs& a, const CLI::App& root) {
    if (is_agent_workload(a.agent)) {
        check_expert_flags_unused(a.gen.bench, a.agent.workload);
        return workload::run_agent_bench(agent_options(a));
    }
    if (a.agent.workload == "serving")
        return exit_on_verdicts(workload::run_serving_bench({a.gen.bench, a.agent.workload_file, a.serving}),
                                a.no_verdict_exit);
    exit_on_verdicts(workload::run_generation_bench(generation_options(a, root)), a.no_verdict_exit);
}

}  // namespace

void register_bench(CLI::App& app) {
    auto a = std::make_shared<BenchArgs>();
    CLI::App* c = app.add_subcommand(
        "bench",
        "Compare a baseline and a target placement on the modelled NPU + PIM. A preset runs trace-only (shapes,\n"
        "no weights); a GGUF file also runs the engine for real in both policies and checks the tokens agree.\n"
        "Examples:\n  duet bench --baseline npu_only --target npu_pim_coop --seq-len 2048 --gen-len 256 \\\n"
        "             --model llama2-7b --report reports/coop_2k.json --trace timeline.json --svg chart.svg\n"
        "  duet bench --model llama2-7b --pims 2        (decode GEMVs split across two PIM devices)\n"
        "  duet bench --model llama2-70b --npus 8 --pims 8 --tp 8 --hccl-expansion AIV   (tensor parallel, docs/scale-out.md)\n"
        "  duet bench --model llama2-70b --pims 8 --tp 8 --target pim_only --topology cxl.toml   (pim_link = \"cxl2_x16\")\n"
        "  duet bench --model deepseek-v3 --npus 8 --pims 8 --ep 8 --expert-skew 0.5   (expert parallel, docs/scale-out.md)\n"
        "  duet bench -m model.gguf --seq-len 64 --gen-len 32\n"
        "  duet bench --workload agent -m model.gguf --report agent.json --svg agent.svg   (docs/agent.md)\n"
        "  duet bench --workload serving --model llama2-7b --rate 4 --requests 1000 --seq-len 512 --gen-len 128 \\\n"
        "             --slo-ttft-ms 500 --slo-tpot-ms 50 --report serving.json   (docs/serving.md)\n"
        "Exit status: 0 when every verdict is MET, 3 when any is NOT MET (--no-verdict-exit: 0), 2 for errors.");
    a->gen.bench.settings_path = default_settings_path();
    a->gen.bench.config_path = default_config_path();
    text(c, "--baseline", a->gen.bench.baseline, "Baseline policy: npu_only, pim_only, npu_pim_coop, auto");
    text(c, "--target", a->gen.bench.target, "Target policy");
    number(c, "--seq-len", a->gen.bench.seq_len, "Prompt tokens", int64_t(1), kMaxTokens,
           DefaultFrom{"settings runtime.seq_len"});
    number(c, "--gen-len", a->gen.bench.gen_len, help::kGenLen, int64_t(1), int64_t(65536));
    number(c, "--batch", a->gen.batch, "Concurrent sequences", int64_t(1), int64_t(4096),
           DefaultFrom{"settings runtime.batch_size"});
    number(c, "--max-memory-mb", a->max_memory_mb, help::kMaxMemoryMb, int64_t(128), int64_t(1) << 22);
    text(c, "--model,-m", a->gen.bench.model, help::kModelAny, DefaultFrom{"settings api.model"});
    text(c, "--settings", a->gen.bench.settings_path, help::kSettings);
    text(c, "--config", a->gen.bench.config_path, help::kConfig);
    text(c, "--pim", a->gen.bench.pim, help::kPim, DefaultFrom{"pim_hbm2_fimdram"});
    text(c, "--npu-dispatch", a->gen.bench.dispatch, help::kNpuDispatch,
         DefaultFrom{"queue1"});
    text(c, "--kv-type", a->gen.kv_type, help::kKvType, DefaultFrom{"settings runtime.dtype"})
        ->transform(dtype_alias("--kv-type", {"int8"}));
    c->add_flag("--fuse", a->gen.fuse, help::kFuse);
    c->add_option("--report", a->gen.bench.report, "Write the JSON report here (docs/report-schema.md)");
    c->add_option("--trace", a->gen.bench.trace, "Write a Chrome/Perfetto trace of both timelines (one track group per device and link)");
    number(c, "--trace-steps", a->gen.bench.trace_steps, "Decode steps the trace records (prefill is always recorded)",
           int64_t(0), int64_t(1) << 20, DefaultFrom{"all"});
    number(c, "--npus", a->gen.bench.npus, "NPUs in the simulated machine", int64_t(1), int64_t(64),
           DefaultFrom{"config.toml [topology] npus = 1"});
    number(c, "--pims", a->gen.bench.pims, "PIM devices; decode GEMVs are split by rows across them", int64_t(0), int64_t(64),
           DefaultFrom{"config.toml [topology] pims = 1"});
    text(c, "--topology", a->gen.bench.topology,
         "TOML file with a [topology] section (npus, pims, npu_link, pim_link, pim_presets; docs/topology.md)");
    number(c, "--tp", a->gen.bench.tp, "Tensor-parallel ranks: heads and FFN split, all-reduce per block (docs/scale-out.md)",
           int64_t(1), int64_t(1024));
    number(c, "--pp", a->gen.bench.pp, "Pipeline stages: layers split, micro-batches of the batch in flight (serving: one virtual engine per stage)", int64_t(1),
           int64_t(1024));
    number(c, "--ep", a->gen.bench.ep,
           "Expert-parallel ranks of a MoE model: routed experts split across devices, all-to-all dispatch and "
           "combine per MoE layer; with --tp N, --ep N puts the experts on the N tensor-parallel ranks (docs/scale-out.md)", int64_t(1), int64_t(1024), DefaultFrom{"config.toml [topology] ep = 1"});
    number(c, "--expert-skew", a->gen.bench.expert_skew,
           "Zipf exponent s of the routing: expert i takes (i+1)^-s of the routed rows, normalised (0: uniform)", 0.0,
           10.0, DefaultFrom{"uniform routing"});
    text(c, "--routing-stats", a->gen.bench.routing_stats,
         "JSON file of per-layer, per-expert routed-row fractions (docs/scale-out.md, \"Routing statistics\")");
    c->add_flag("--flashcomm", a->gen.bench.flashcomm,
                "Reduce-scatter + all-gather in place of each all-reduce, add + norm on 1/tp of the tokens (else "
                "VLLM_ASCEND_ENABLE_FLASHCOMM)");
    text(c, "--hccl-expansion", a->gen.bench.hccl_expansion,
         "Where collectives are expanded, their launch cost: AI_CPU, AIV, HOST, HOST_TS (configs/hw/collectives.toml)",
         DefaultFrom{"HCCL_OP_EXPANSION_MODE, else HOST"});
    c->add_option("--svg", a->gen.bench.svg, "Write an SVG chart: TBT per token and memory breakdown (--workload serving --rate-sweep: p99 TTFT and TPOT against throughput)");
    number(c, "--tbt-reduction-min", a->gen.bench.th.tbt_reduction_min, "Verdict: required TBT reduction (fraction)", 0.0, 1.0);
    number(c, "--ttft-increase-max-ms", a->gen.bench.th.ttft_increase_max_ms, "Verdict: allowed TTFT increase (ms)", 0.0,
           1e6);
    number(c, "--memory-increase-max", a->gen.bench.th.memory_increase_max,
           "Verdict: allowed peak memory increase (fraction, 1 = +100%)", 0.0, 10.0);
    add_warmup_flags(c, a->gen.warmup);
    add_agent_bench_flags(c, a->agent);
    add_serving_bench_flags(c, a->serving);
    c->add_flag("--no-verdict-exit", a->no_verdict_exit, "Exit 0 even when a verdict is NOT MET (exploration)");
    c->callback([a, &app]() { run_bench(*a, app); });
}

}  // namespace duet::cli
