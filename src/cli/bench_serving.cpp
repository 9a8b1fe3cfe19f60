#include "cli/bench_serving.h"
#include "cli/bench_serving_report.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

#include <unistd.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/knob_effects.h"
#include "config/coop_config.h"
#include "config/runtime_knobs.h"
#include "config/settings.h"
#include "core/error.h"
#include "format/gguf.h"
#include "hw/cpu/host_engine_device.h"
#include "model/arch_presets.h"
#include "model/hparams.h"
#include "model/tokenizer/tokenizer.h"
#include "parallel/communicator.h"
#include "sched/scheduler.h"
#include "serving/kv_capacity.h"
#include "serving/replica_set.h"
#include "serving/rate_sweep.h"
#include "serving/serving_layout.h"
#include "serving/serving_metrics.h"
#include "serving/step_cost.h"
#include "serving/step_trace.h"
#include "sim/report_files.h"
#include "workload/modelled_machine.h"
#include "workload/report_context.h"
#include "workload/trace_bench.h"
#include "workload/serving_trace.h"

namespace duet::cli {

void add_serving_bench_flags(CLI::App* c, ServingBenchArgs& a) {
    text(c, "--rate", a.rate,
         "With --workload serving: request arrivals per second (gamma-distributed gaps, Poisson at --burstiness 1), "
         "or inf: every request at t = 0");
    number(c, "--burstiness", a.burstiness,
           "With --workload serving: coefficient of variation of the arrival gaps (1: Poisson, > 1: burstier)", 0.01,
           100.0);
    number(c, "--requests", a.requests, "With --workload serving: requests (synthetic, or the first N of the file)",
           int64_t(1), int64_t(10000000));
    number(c, "--seed", a.seed, "With --workload serving: seed of the arrival times", int64_t(0), kMaxSeed);
    number(c, "--slo-ttft-ms", a.slo_ttft_ms, "With --workload serving: TTFT SLO of goodput (ms)", 0.0, 1e9,
           DefaultFrom{"none"});
    number(c, "--slo-tpot-ms", a.slo_tpot_ms, "With --workload serving: TPOT SLO of goodput (ms)", 0.0, 1e9,
           DefaultFrom{"none"});
    number(c, "--kv-blocks", a.kv_blocks,
           "With --workload serving: KV cache blocks of the modelled machine (instead of device memory after "
           "weights and workspace)", int64_t(1), int64_t(1) << 40, DefaultFrom{"derived"});
    number(c, "--max-seqs", a.parallel, "With --workload serving: sequences in the running batch at most", int64_t(1),
           int64_t(65536));
    number(c, "--step-tokens", a.step_tokens,
           "With --workload serving: tokens per step (chunked prefill budget; the server's default)", int64_t(1),
           int64_t(1) << 20);
    number(c, "--think-ms", a.think_ms,
           "With --workload serving and an agent session file: time between a call's answer and the session's next "
           "call (tool execution, the agent's own work)", 0.0, 1e9);
    number(c, "--shared-prefix", a.shared_prefix,
           "With --workload serving: the first N prompt tokens are the same in every request (a system prompt): the "
           "modelled prefix cache shares their KV blocks", int64_t(0), kMaxTokens);
    c->add_flag("--rate-sweep", a.rate_sweep,
                "With --workload serving: find each placement's highest request rate within the SLOs (from --rate, "
                "doubling, then bisecting) and draw p99 TTFT/TPOT against throughput (--svg)");
    number(c, "--sweep-width", a.sweep_width,
           "With --rate-sweep: rates tried together in each round of the search (under mpirun -np N they are spread "
           "over the ranks)", int64_t(1), int64_t(64), DefaultFrom{"the mpirun ranks, 1 without mpirun"});
    number(c, "--slo-attainment", a.attainment,
           "With --rate-sweep: share of requests that must finish within the SLOs", 0.01, 1.0);
    number(c, "--ctx", a.ctx, "With --workload serving: context length of a sequence", int64_t(2), kMaxCtx,
           DefaultFrom{"the model's trained context"});
    number(c, "--dp", a.dp,
           "With --workload serving: data-parallel replicas of the modelled machine, each with its own scheduler and "
           "KV cache, behind a router (--router); with --tp N each replica is a group of N NPUs (--npus N x dp)", int64_t(1), int64_t(64));
    text(c, "--router", a.router,
         "With --workload serving --dp N: round_robin, least_outstanding_tokens, or prefix_affinity (a prompt goes "
         "to the replica its prefix went to, unless that one is overloaded)", DefaultFrom{"round_robin"});
    c->add_flag("--disaggregate", a.disaggregate,
                "With --workload serving: prefill/decode disaggregation. npu1 prefills (npu_only placement); npu0 with "
                "the PIM devices decodes under the placement compared; each prompt's KV crosses the npu1-npu0 link "
                "(needs --npus 2; with --tp N: a prefill and a decode group of N NPUs each, --npus 2N)");
    text(c, "--host-profile", a.host_profile, help::kHostProfile);
}

namespace {

double parse_rate(const std::string& s) {
    if (s == "inf") return std::numeric_limits<double>::infinity();
    size_t used = 0;
    double r = 0;
    try {
        r = std::stod(s, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != s.size() || !std::isfinite(r) || r <= 0)
        fail("--rate = \"{}\" is not allowed (allowed: requests per second > 0, or inf)", s);
    return r;
}

// --host-profile: the host CPU as the only device (hw/cpu/host_engine_device.h), with the
// profile's per-step host work, KV block size and memory; the layout model is the rig's (unused
// by npu_only, required by the timeline).
struct HostMachine {
    std::unique_ptr<hw::cpu::HostEngineDevice> device;  // null: no --host-profile
    sim::SimHardware hw;
};

HostMachine host_machine(const ServingBenchArgs& a, const sim::SimHardware& rig_hw) {
    HostMachine m;
    if (a.host_profile.empty()) return m;
    m.device = std::make_unique<hw::cpu::HostEngineDevice>(hw::cpu::load_host_profile(a.host_profile));
    const hw::cpu::HostProfile& p = m.device->profile();
    m.hw.add_device(sim::DeviceKind::NPU, m.device.get());
    m.hw.layout = rig_hw.layout;
    m.hw.memory_name = "host DRAM";
    m.hw.mem_capacity_bytes = uint64_t(p.memory_gib * double(uint64_t(1) << 30));
    m.hw.step_host_ns = p.step_ns;
    m.hw.step_host_ns_per_seq = p.step_ns_per_seq;
    m.hw.kv_block_tokens = p.kv_block_tokens;
    return m;
}

// The weight dtype holding most of a GGUF file's matrix bytes (the engine's matmuls read them).
DType matmul_dtype_of(const format::GgufFile& f) {
    std::map<DType, uint64_t> bytes;
    for (const format::GgufTensorInfo& t : f.tensors())
        if (t.shape.size() == 2 && t.shape[1] > 1 && is_matmul_weight_dtype(t.dtype)) bytes[t.dtype] += t.n_bytes;
    DType best = DType::F16;
    uint64_t most = 0;
    for (const auto& [d, b] : bytes)
        if (b > most) best = d, most = b;
    return best;
}

// The rates of one round of --rate-sweep over the ranks: rate i on rank i mod size, each summary
// then broadcast from its rank, so every rank holds all of them in order.
serving::BatchRun sweep_spread(parallel::Communicator& comm,
                               const std::function<serving::ServingSummary(double)>& at_rate) {
    static_assert(std::is_trivially_copyable_v<serving::ServingSummary>);
    return [&comm, at_rate](const std::vector<double>& rates) {
        std::vector<serving::ServingSummary> got(rates.size());
        const size_t ranks = size_t(comm.size()), me = size_t(comm.rank());
        for (size_t i = 0; i < rates.size(); ++i)
            if (i % ranks == me) got[i] = at_rate(rates[i]);
        for (size_t i = 0; i < rates.size(); ++i) comm.broadcast(&got[i], int64_t(sizeof got[i]), int(i % ranks));
        return got;
    };
}

// Steps a placement's trace records by default: bounds the file (about 0.5 KB per step).
constexpr int64_t kMaxTraceSteps = 100000;

// Expert parallelism: one instance is the EP group, a rank per NPU (idle NPUs beside one
// scheduler model nothing; replicas are --dp).
void check_one_expert_group(const workload::TraceBenchInputs& in, const sim::SimHardware& hw) {
    const size_t npus = hw.devices_of(sim::DeviceKind::NPU).size();
    if (in.ep > 1 && size_t(in.ep) != npus)
        fail("--ep {} with --workload serving on {} NPUs: the serving instance is the expert-parallel group, one rank "
             "per NPU (allowed: --npus {})", in.ep, npus, in.ep);
}

}  // namespace

void run_bench_serving(const ServingBenchArgs& a, const ServingBenchCommon& c) {
    const auto t0 = std::chrono::steady_clock::now();
    // Under mpirun every rank runs the same deterministic simulation; --rate-sweep spreads its rates
    // over them (SweepSpread). Rank 0 alone prints and writes files.
    const std::unique_ptr<parallel::Communicator> comm = parallel::make_world_communicator();
    const bool root = comm->rank() == 0;
    if (!root && !std::freopen("/dev/null", "w", stdout)) fail("rank {}: cannot silence its output", comm->rank());
    const int sweep_width = int(a.sweep_width > 0 ? a.sweep_width : comm->size());
    const config::EnvMap env = config::process_env();
    const config::Settings st = config::load_settings(c.settings_path, env, workload::known_soc_names());
    config::CoopConfig cfg = config::load_coop_config(c.config_path, env);
    cfg.topology = workload::topology_from_flags(cfg.topology, c.topology, c.npus, c.pims);
    if (c.pp > 1)
        fail("--pp {} with --workload serving: the serving model has no pipeline stages (allowed: --pp 1; --tp N "
             "splits every step's layers over N ranks)", c.pp);
    const int64_t ep = c.ep != -1 ? c.ep : cfg.topology.ep;
    if (ep > 1 && (a.dp > 1 || a.disaggregate))
        fail("--ep {} with {}: a replica or instance is one device group of the machine (allowed: --ep with --dp 1 "
             "and without --disaggregate)", ep, a.dp > 1 ? "--dp " + std::to_string(a.dp) : "--disaggregate");
    if (!a.host_profile.empty() && (c.tp > 1 || c.ep > 1 || a.dp > 1 || a.disaggregate))
        fail("--host-profile models one host CPU (allowed: without --tp, --ep, --dp and --disaggregate)");
    const workload::ArrivalSpec spec{parse_rate(a.rate), a.burstiness, uint64_t(a.seed)};
    const serving::Slo slo{a.slo_ttft_ms, a.slo_tpot_ms};
    if (a.rate_sweep && slo.ttft_ms < 0 && slo.tpot_ms < 0)
        fail("--rate-sweep needs an SLO to meet (allowed: --slo-ttft-ms and/or --slo-tpot-ms)");
    if (a.rate_sweep && !c.workload_file.empty() && !workload::is_sharegpt_file(c.workload_file) &&
        !workload::is_agent_session_file(c.workload_file))
        fail("--rate-sweep with a JSONL trace: its arrival times are the trace's own (allowed: synthetic arrivals, "
             "a ShareGPT file or agent sessions)");

    workload::TraceBenchInputs in;
    in.model = c.model.empty() ? st.api.model : c.model;
    in.seq_len = c.seq_len != -1 ? c.seq_len : st.runtime.seq_len;
    in.gen_len = c.gen_len;
    in.baseline = c.baseline;
    in.target = c.target;
    in.pim = c.pim;
    in.tp = int(c.tp);
    const config::RuntimeKnobs knobs = runtime_knobs_of(st);
    workload::set_collective_knobs(in, c.flashcomm, c.hccl_expansion, knobs);
    in.dispatch = config::effective_npu_dispatch(c.dispatch, knobs);
    in.prefetch_mlp = knobs.prefetch_mlp;
    in.multi_stream_memory_reuse = knobs.multi_stream_memory_reuse;
    const bool file_model = model::find_arch_preset(in.model) == nullptr;
    if (file_model && !std::filesystem::exists(in.model))
        fail("--model = \"{}\" is neither an architecture preset nor a file (presets: {})", in.model,
             model::arch_preset_list());
    std::unique_ptr<format::GgufFile> gguf;
    if (file_model) gguf = std::make_unique<format::GgufFile>(format::GgufFile::open(in.model));
    const model::Hparams hp = file_model ? model::hparams_from_gguf(*gguf) : *model::find_arch_preset(in.model);
    workload::set_expert_inputs(in, int(ep), c.expert_skew, c.routing_stats, st.runtime.dtype);
    const workload::BenchSetup setup = workload::prepare_bench(st, cfg, in, /*file_mode=*/false);
    check_one_expert_group(in, setup.rig->hw);

    const int64_t n_ctx = a.ctx != -1 ? a.ctx : hp.n_ctx_train;
    if (n_ctx < 2) fail("{} states no trained context (allowed: --ctx N)", in.model);
    std::vector<serving::ServingRequest> reqs;
    std::string source;
    if (!c.workload_file.empty()) {
        std::unique_ptr<model::Tokenizer> tok;
        if (gguf) tok = model::Tokenizer::from_gguf(*gguf);
        workload::TokenCounter count;
        if (tok)
            count = [&](const std::string& text) { return tok->encode(text, tok->add_bos_default(), false); };
        if (workload::is_agent_session_file(c.workload_file)) {  // closed loop: --requests sessions
            reqs = workload::agent_session_requests(workload::load_agent_trace(c.workload_file), a.requests, spec,
                                                    int64_t(std::llround(a.think_ms * 1e6)), n_ctx);
            source = fmt::format("{} sessions of ", a.requests);
        } else {
            reqs = workload::load_serving_trace(c.workload_file, n_ctx, count, spec, a.requests);
        }
        source += c.workload_file;
    } else {
        if (in.seq_len + in.gen_len > n_ctx)
            fail("--seq-len {} + --gen-len {} exceeds the context of {} tokens (allowed: at most {} in all, or --ctx)",
                 in.seq_len, in.gen_len, n_ctx, n_ctx);
        reqs = workload::synthetic_requests(spec, a.requests, in.seq_len, in.gen_len);
        source = fmt::format("synthetic: prompt {} and output {} tokens", in.seq_len, in.gen_len);
    }
    if (a.shared_prefix > 0) {
        workload::give_shared_prefix(reqs, a.shared_prefix);
        source += fmt::format(", the first {} shared", a.shared_prefix);
    }
    const std::string arrivals = std::isinf(spec.rate_rps)
                                     ? std::string("all at t = 0")
                                     : fmt::format("{} req/s, burstiness {} (seed {})", a.rate, a.burstiness, a.seed);

    sched::SchedulerOptions so;
    so.n_parallel = a.parallel;
    so.step_token_budget = a.step_tokens;
    so.n_ctx = n_ctx;
    // The modelled prefix cache needs token ids (sched/block_pool.h): --shared-prefix, or text prompts.
    so.prefix_sharing = std::any_of(reqs.begin(), reqs.end(), [](const serving::ServingRequest& r) { return r.tokens != nullptr; });
    const HostMachine host = host_machine(a, setup.rig->hw);
    const sim::SimHardware& hw = host.device ? host.hw : setup.rig->hw;
    const serving::ServingLayout lay = serving::serving_layout(hw, int(a.dp), int(c.tp), a.disaggregate);
    serving::ReplicaSetSpec replicas;  // without the per-side instances
    if (!a.router.empty()) {
        replicas.router = serving::router_from_name(a.router, "--router");
        if (a.dp == 1)
            fail("--router {} with one replica routes nothing (allowed: --dp 2 or more)", a.router);
    }
    std::printf("serving: %s, %zu requests (%s; arrivals %s), context %lld, max %lld seqs, %lld tokens per step\n",
                in.model.c_str(), reqs.size(), source.c_str(), arrivals.c_str(), (long long)n_ctx,
                (long long)a.parallel, (long long)a.step_tokens);
    if (lay.disaggregated)
        std::printf("disaggregated: prefill on %s (npu_only), decode on %s; KV %sover %s (%s: %g GB/s, %g ns latency "
                    "+ %g ns per transfer)\n", lay.prefill_devices().c_str(), lay.decode_devices().c_str(),
                    lay.tp > 1 ? "shards, rank to rank, " : "", lay.kv_link.name.c_str(), lay.kv_link.preset.c_str(),
                    lay.kv_link.bandwidth_gbps, lay.kv_link.latency_ns, lay.kv_link.per_transfer_ns);
    if (lay.dp > 1) std::printf("replicas: %d behind the %s router\n", lay.dp, serving::router_name(replicas.router));
    if (lay.split)
        for (int r = 0; r < lay.dp; ++r)
            std::printf("  replica %d: %s\n", r, lay.replica_devices[size_t(r)].c_str());
    replicas.dp = lay.dp;
    replicas.disaggregated = lay.disaggregated;
    replicas.link = lay.kv_link;
    ServingSide sides[2];
    std::pair<sim::Policy, const graph::ModelShape*> runs[2] = {{setup.pb, &setup.shape_b},
                                                              {setup.pt, &setup.shape_t}};
    graph::ModelShape host_shape = setup.shape_b;  // the file's weights, as the engine reads them
    if (host.device) {  // the host CPU alone: both sides run everything on it
        if (gguf) host_shape.weight_dtype = matmul_dtype_of(*gguf);
        runs[0] = runs[1] = {sim::Policy::NPU_ONLY, &host_shape};
        std::printf("machine: %s from host profile %s (probed on %s, %s)\n", host.device->name().c_str(),
                    a.host_profile.c_str(), host.device->profile().model.c_str(), host.device->profile().measured.c_str());
    }
    sched::SchedulerOptions so_local = so;
    const int64_t trace_cap = c.trace_steps >= 0 ? c.trace_steps : kMaxTraceSteps;
    const int64_t step_tokens = std::max(a.step_tokens, a.parallel);
    // The KV cache of one instance: derived from its memory, or --kv-blocks (the other bytes still count in
    // the memory verdict when the memory is known).
    auto capacity = [&](const graph::ModelShape& shape, const sim::RunOptions& ro, const sim::SimHardware& h,
                        const char* what) {
        serving::KvCapacity kv;
        if (a.kv_blocks != -1) {
            if (h.mem_capacity_bytes > 0) kv = serving::kv_capacity(shape, ro, h, step_tokens);
            kv.block_tokens = h.kv_block_tokens;
            kv.n_blocks = a.kv_blocks;
        } else {
            kv = serving::kv_capacity(shape, ro, h, step_tokens);
            std::printf("KV cache (%s%s): %lld blocks of %lld tokens = %s of %s device memory after %s of weights, "
                        "activations and workspace\n",
                        sim::policy_name(ro.placement.policy), what, (long long)kv.n_blocks,
                        (long long)kv.block_tokens, gib(uint64_t(kv.n_blocks) * kv.block_bytes).c_str(),
                        gib(kv.device_bytes).c_str(), gib(kv.other_bytes).c_str());
        }
        if (kv.n_blocks < 1)
            fail("{} under {}{}: no device memory is left for the KV cache (allowed: a larger memory preset, or "
                 "--kv-blocks N)", in.model, sim::policy_name(ro.placement.policy), what);
        return kv;
    };
    for (int i = 0; i < 2; ++i) {
        ServingSide& s = sides[i];
        s.policy = runs[i].first;
        const graph::ModelShape& shape = *runs[i].second;
        const sim::RunOptions ro = workload::bench_run_options(cfg, s.policy, in);
        const sim::SimHardware& decode_hw = lay.disaggregated ? lay.decode_hw : lay.colocated_hw;
        s.kv = capacity(shape, ro, decode_hw, lay.disaggregated ? ", decode instance" : "");
        graph::GraphOptions go;  // --tp: each step as rank 0's graph with its collectives over its group
        go.tp = in.tp;
        go.ep = in.ep;
        go.flashcomm = in.flashcomm;
        s.cost = std::make_unique<serving::StepCostModel>(shape, ro, decode_hw, go);
        uint64_t kv_bytes_per_token = 0;
        if (lay.disaggregated) {  // the prefill instance: the same weights in NZ on its NPUs alone
            const sim::RunOptions pro = workload::bench_run_options(cfg, sim::Policy::NPU_ONLY, in);
            s.prefill_kv = capacity(shape, pro, lay.prefill_hw, ", prefill instance");
            s.prefill_cost = std::make_unique<serving::StepCostModel>(shape, pro, lay.prefill_hw, go);
            kv_bytes_per_token = serving::kv_rank_bytes_per_token(shape, pro, lay.prefill_hw);  // one rank's shard
        }
        serving::ReplicaSetSpec rs = replicas;
        rs.first = lay.disaggregated ? serving::InstanceSpec{s.prefill_kv.n_blocks, s.prefill_kv.block_tokens,
                                                             s.prefill_cost.get()}
                                     : serving::InstanceSpec{s.kv.n_blocks, s.kv.block_tokens, s.cost.get()};
        rs.decode = {s.kv.n_blocks, s.kv.block_tokens, s.cost.get()};
        rs.kv_bytes_per_token = kv_bytes_per_token;
        s.trace.assign(size_t(rs.instances()), {});
        auto simulate = [&](const std::vector<serving::ServingRequest>& rq, bool traced, bool quiet = false) {
            // Progress on a terminal for long runs (not the sweep's): requests arrived, every 2000 steps.
            const bool progress = !quiet && rq.size() >= 2000 && isatty(fileno(stderr));
            int64_t seen = 0, n_steps = 0;
            serving::ClusterObserver observe;
            if (traced || progress)
                observe = [&](serving::InstanceRef at, int64_t t, const std::vector<int64_t>& arrived,
                              const sched::Step& st, const sched::Scheduler& sch, const sched::KvPool& p) {
                    if (!at.decode) seen += int64_t(arrived.size());
                    if (progress && ++n_steps % 2000 == 0)
                        std::fprintf(stderr, "\rserving (%s): %lld of %zu requests arrived", sim::policy_name(s.policy),
                                     (long long)seen, rq.size());
                    std::vector<serving::StepEvent>& tr = s.trace[size_t(rs.instance_index(at))];
                    if (!traced || st.chunks.empty() || int64_t(tr.size()) >= trace_cap) return;
                    tr.push_back({t, -1, st.prefill_tokens(), st.decode_tokens(), sch.n_running(), sch.n_waiting(),
                                  p.n_blocks() - p.n_free(), int64_t(st.admitted.size()),
                                  int64_t(st.preempted.size())});
                };
            serving::StepTimed timed;
            if (traced)
                timed = [&](int k, int64_t ns) {
                    std::vector<serving::StepEvent>& tr = s.trace[size_t(k)];
                    if (!tr.empty() && tr.back().dur_ns < 0) tr.back().dur_ns = ns;
                };
            serving::ServingResult res = serving::run_replica_set(rq, so_local, rs, observe, timed);
            if (progress && n_steps >= 2000) std::fprintf(stderr, "\r%60s\r", "");
            return res;
        };
        s.result = simulate(reqs, !c.trace.empty());
        s.summary = serving::summarize(s.result, slo);
        s.expert_rows = s.cost->expert_rows();
        s.expert_rows_pim = s.cost->expert_rows_on_pim();
        if (a.rate_sweep) {
            auto at_rate = [&](double rate) {
                workload::ArrivalSpec sp = spec;
                sp.rate_rps = rate;
                std::vector<serving::ServingRequest> rq = reqs;
                std::vector<size_t> open;  // requests arriving on their own (not an agent session's later calls)
                for (size_t k = 0; k < rq.size(); ++k)
                    if (rq[k].after < 0) open.push_back(k);
                const std::vector<int64_t> t = workload::arrival_times_ns(sp, int64_t(open.size()));
                for (size_t k = 0; k < open.size(); ++k) rq[open[k]].arrival_ns = t[k];
                return serving::summarize(simulate(rq, false, true), slo);
            };
            s.sweep = serving::rate_sweep_batched(sweep_spread(*comm, at_rate), sweep_width,
                                                  std::isinf(spec.rate_rps) ? 1.0 : spec.rate_rps, a.attainment, 4);
        }
        s.evaluations = s.cost->evaluations() + (s.prefill_cost ? s.prefill_cost->evaluations() : 0);
        s.lookups = s.cost->lookups() + (s.prefill_cost ? s.prefill_cost->lookups() : 0);
        s.pim_steps = s.cost->pim_steps();
    }
    print_table(sides[0], sides[1], lay);
    for (const ServingSide& s : sides)
        if (const nlohmann::json e = experts_json(s, in); !e.is_null())
            std::printf("experts (%s): ep %d, routing %s: %.1f %% of the routed expert rows on PIM\n",
                        sim::policy_name(s.policy), in.ep, in.routing->source.c_str(),
                        100 * e["pim_row_share"].get<double>());
    const std::vector<sim::Verdict> verdicts = judge_serving(sides[0], sides[1], c.th);
    for (const sim::Verdict& v : verdicts) std::printf("%s\n", v.line.c_str());
    if (a.slo_ttft_ms >= 0 || a.slo_tpot_ms >= 0)
        std::printf("goodput SLOs: TTFT <= %s ms, TPOT <= %s ms\n",
                    a.slo_ttft_ms >= 0 ? fmt::format("{:g}", a.slo_ttft_ms).c_str() : "any",
                    a.slo_tpot_ms >= 0 ? fmt::format("{:g}", a.slo_tpot_ms).c_str() : "any");
    if (a.rate_sweep) {
        std::printf("rate sweep: %d rate%s per round, on %d rank%s (%s)\n", sweep_width, sweep_width == 1 ? "" : "s",
                    comm->size(), comm->size() == 1 ? "" : "s", comm->kind());
        for (const ServingSide& s : sides) {
            std::printf("rate sweep (%s): highest rate within the SLOs (%.0f%% of requests): %.3g req/s\n",
                        sim::policy_name(s.policy), a.attainment * 100, s.sweep.max_rate_rps);
            for (const serving::SweepPoint& p : s.sweep.points)
                std::printf("  %10.4g req/s offered: %8.3f achieved, p99 TTFT %9.2f ms, p99 TPOT %8.2f ms, %s\n",
                            p.rate_rps, p.summary.requests_per_s, p.summary.ttft_ms.p99, p.summary.tpot_ms.p99,
                            p.meets ? "meets" : "misses");
        }
        if (!c.svg.empty() && root) {
            sim::write_file_atomic(c.svg, serving::sweep_svg(in.model + ": latency against throughput",
                                                             {sim::policy_name(sides[0].policy),
                                                              sim::policy_name(sides[1].policy)},
                                                             {sides[0].sweep, sides[1].sweep}, slo));
            std::printf("chart: %s\n", c.svg.c_str());
        }
    }
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("step compositions timed: %lld and %lld of %lld and %lld steps (%.2f s wall)\n",
                (long long)sides[0].evaluations, (long long)sides[1].evaluations, (long long)sides[0].lookups,
                (long long)sides[1].lookups, wall_s);
    if (!c.report.empty() && root) {
        nlohmann::json j = {{"schema", "duet.serving/1"},
                            {"model", in.model},
                            {"workload",
                             {{"source", source},
                              {"requests", reqs.size()},
                              {"rate_rps", std::isinf(spec.rate_rps) ? nlohmann::json("inf") : nlohmann::json(spec.rate_rps)},
                              {"burstiness", a.burstiness},
                              {"seed", a.seed},
                              {"context", n_ctx},
                              {"max_seqs", a.parallel},
                              {"step_tokens", a.step_tokens},
                              {"dp", a.dp},
                              {"tp", c.tp},
                              {"router", serving::router_name(replicas.router)},
                              {"disaggregated", lay.disaggregated},
                              {"kv_link", lay.disaggregated ? nlohmann::json{{"name", lay.kv_link.name},
                                                                             {"preset", lay.kv_link.preset},
                                                                             {"bandwidth_gbps", lay.kv_link.bandwidth_gbps},
                                                                             {"latency_ns", lay.kv_link.latency_ns},
                                                                             {"per_transfer_ns", lay.kv_link.per_transfer_ns}}
                                                            : nlohmann::json(nullptr)},
                              {"slo_ttft_ms", a.slo_ttft_ms >= 0 ? nlohmann::json(a.slo_ttft_ms) : nlohmann::json(nullptr)},
                              {"slo_tpot_ms", a.slo_tpot_ms >= 0 ? nlohmann::json(a.slo_tpot_ms) : nlohmann::json(nullptr)}}},
                            {"serving", {{"baseline", side_json(sides[0], lay, experts_json(sides[0], in))},
                                         {"target", side_json(sides[1], lay, experts_json(sides[1], in))}}},
                            {"verdicts", sim::verdicts_to_json(verdicts)},
                            {"config", workload::config_json(st, cfg)},
                            {"topology", workload::topology_json(hw)}};
        sim::write_file_atomic(c.report, j.dump(2) + "\n");
        std::printf("report: %s\n", c.report.c_str());
    }
    if (!c.trace.empty() && root) {
        std::vector<std::string> names;
        std::vector<std::vector<serving::StepEvent>> tracks;
        size_t n_steps[2] = {0, 0};
        for (int i = 0; i < 2; ++i)
            for (int k = 0; k < replicas.instances(); ++k) {
                names.push_back(fmt::format("{} {}{}", i == 0 ? "baseline" : "target", sim::policy_name(sides[i].policy),
                                            replicas.instance_name(k)));
                tracks.push_back(sides[i].trace[size_t(k)]);
                n_steps[i] += tracks.back().size();
            }
        sim::write_file_atomic(c.trace, serving::steps_trace_json(names, tracks).dump());
        std::printf("trace: %s (%zu and %zu steps; open in ui.perfetto.dev)\n", c.trace.c_str(), n_steps[0],
                    n_steps[1]);
    }
    bool all_met = true;  // exit status as `duet bench`: 3 when a verdict is NOT MET (unless --no-verdict-exit)
    for (const sim::Verdict& v : verdicts) all_met = all_met && v.met;
    if (!all_met && !c.no_verdict_exit) throw ExitStatus{3};
}

}  // namespace duet::cli
