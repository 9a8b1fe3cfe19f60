#include "workload/serving_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include <unistd.h>

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
#include "serving/rate_sweep.h"
#include "serving/replica_set.h"
#include "serving/serving_layout.h"
#include "serving/serving_metrics.h"
#include "serving/step_cost.h"
#include "sim/report_files.h"
#include "workload/knob_effects.h"
#include "workload/modelled_machine.h"
#include "workload/report_context.h"
#include "workload/serving_bench_report.h"
#include "workload/serving_trace.h"
#include "workload/trace_bench.h"

namespace duet::workload {

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

HostMachine host_machine(const ServingLoad& a, const sim::SimHardware& rig_hw) {
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

// Expert parallelism: an instance is the EP group, a rank per NPU (idle NPUs beside one
// scheduler model nothing); --dp N replicas cut the machine into N such groups
// (serving/serving_layout.h, which checks that case).
void check_one_expert_group(const TraceBenchInputs& in, int64_t dp, const sim::SimHardware& hw) {
    const size_t npus = hw.devices_of(sim::DeviceKind::NPU).size();
    if (in.ep > 1 && dp == 1 && size_t(in.ep) != npus)
        fail("--ep {} with --workload serving on {} NPUs: the serving instance is the expert-parallel group, one rank "
             "per NPU (allowed: --npus {}, or --dp N with --npus N x {})", in.ep, npus, in.ep, in.ep);
}

// What the serving model cannot run: pipeline stages beside experts, experts beside
// disaggregation, a host profile beside any parallelism (pipeline stages beside replicas:
// serving::serving_layout).
void check_machine_options(const ServingBenchOptions& o, const config::CoopConfig& cfg) {
    const ServingLoad& a = o.load;
    const int64_t ep = o.bench.ep != -1 ? o.bench.ep : cfg.topology.ep;
    if (cfg.topology.tp_split != config::TpSplitMode::MEGATRON)
        fail("[topology] tp_split = \"cent\" with --workload serving: the serving model runs Megatron's split "
             "(allowed: tp_split = \"megatron\", or a generation workload)");
    if (o.bench.pp > 1 && ep > 1)
        fail("--pp {} with --ep {}: the serving model runs pipeline stages or expert parallelism, not both (allowed: "
             "--pp 1 or --ep 1)", o.bench.pp, ep);
    if (ep > 1 && a.disaggregate)
        fail("--ep {} with --disaggregate: the serving model disaggregates dense or tensor-parallel instances only "
             "(allowed: --ep with colocated instances, --dp N for replicas)", ep);
    if (!a.host_profile.empty() && (o.bench.tp > 1 || o.bench.pp > 1 || o.bench.ep > 1 || a.dp > 1 || a.disaggregate))
        fail("--host-profile models one host CPU (allowed: without --tp, --pp, --ep, --dp and --disaggregate)");
}

// --rate-sweep needs an SLO and arrival times it may choose.
void check_sweep_options(const ServingBenchOptions& o, const serving::Slo& slo) {
    if (o.load.rate_sweep && slo.ttft_ms < 0 && slo.tpot_ms < 0)
        fail("--rate-sweep needs an SLO to meet (allowed: --slo-ttft-ms and/or --slo-tpot-ms)");
    if (o.load.rate_sweep && !o.workload_file.empty() && !is_sharegpt_file(o.workload_file) &&
        !is_agent_session_file(o.workload_file))
        fail("--rate-sweep with a JSONL trace: its arrival times are the trace's own (allowed: synthetic arrivals, "
             "a ShareGPT file or agent sessions)");
}

// The comparison's inputs (model, placements, devices, collectives) with the runtime knobs.
TraceBenchInputs serving_inputs(const ServingBenchOptions& o, const config::Settings& st) {
    TraceBenchInputs in;
    in.model = o.bench.model.empty() ? st.api.model : o.bench.model;
    in.seq_len = o.bench.seq_len != -1 ? o.bench.seq_len : st.runtime.seq_len;
    in.gen_len = o.bench.gen_len;
    in.baseline = o.bench.baseline;
    in.target = o.bench.target;
    in.pim = o.bench.pim;
    in.tp = int(o.bench.tp);
    in.pp = int(o.bench.pp);
    const config::RuntimeKnobs knobs = runtime_knobs_of(st);
    set_collective_knobs(in, o.bench.flashcomm, o.bench.hccl_expansion, knobs);
    in.dispatch = config::effective_npu_dispatch(o.bench.dispatch, knobs);
    in.prefetch_mlp = knobs.prefetch_mlp;
    in.multi_stream_memory_reuse = knobs.multi_stream_memory_reuse;
    return in;
}

// The model's hyperparameters: a preset's, or a GGUF file's (kept open for its tokenizer and dtypes).
struct ServingModel {
    std::unique_ptr<format::GgufFile> gguf;  // null: a preset
    model::Hparams hp;
};

ServingModel open_serving_model(const std::string& name) {
    const bool file_model = model::find_arch_preset(name) == nullptr;
    if (file_model && !std::filesystem::exists(name))
        fail("--model = \"{}\" is neither an architecture preset nor a file (presets: {})", name,
             model::arch_preset_list());
    ServingModel m;
    if (file_model) m.gguf = std::make_unique<format::GgufFile>(format::GgufFile::open(name));
    m.hp = file_model ? model::hparams_from_gguf(*m.gguf) : *model::find_arch_preset(name);
    return m;
}

struct ServingRequests {
    std::vector<serving::ServingRequest> reqs;
    std::string source;  // what the table's header says of them
};

// Requests from --workload-file (a trace, ShareGPT or agent sessions) or synthetic ones.
ServingRequests load_requests(const ServingBenchOptions& o, const TraceBenchInputs& in, const ArrivalSpec& spec,
                              int64_t n_ctx, const format::GgufFile* gguf) {
    const ServingLoad& a = o.load;
    ServingRequests r;
    if (!o.workload_file.empty()) {
        std::unique_ptr<model::Tokenizer> tok;
        if (gguf) tok = model::Tokenizer::from_gguf(*gguf);
        TokenCounter count;
        if (tok)
            count = [&](const std::string& text) { return tok->encode(text, tok->add_bos_default(), false); };
        if (is_agent_session_file(o.workload_file)) {  // closed loop: --requests sessions
            r.reqs = agent_session_requests(load_agent_trace(o.workload_file), a.requests, spec,
                                            int64_t(std::llround(a.think_ms * 1e6)), n_ctx);
            r.source = fmt::format("{} sessions of ", a.requests);
        } else {
            r.reqs = load_serving_trace(o.workload_file, n_ctx, count, spec, a.requests);
        }
        r.source += o.workload_file;
    } else {
        if (in.seq_len + in.gen_len > n_ctx)
            fail("--seq-len {} + --gen-len {} exceeds the context of {} tokens (allowed: at most {} in all, or --ctx)",
                 in.seq_len, in.gen_len, n_ctx, n_ctx);
        r.reqs = synthetic_requests(spec, a.requests, in.seq_len, in.gen_len);
        r.source = fmt::format("synthetic: prompt {} and output {} tokens", in.seq_len, in.gen_len);
    }
    if (a.shared_prefix > 0) {
        give_shared_prefix(r.reqs, a.shared_prefix);
        r.source += fmt::format(", the first {} shared", a.shared_prefix);
    }
    return r;
}

// The replicas (without the per-side instances): --router, checked against --dp.
serving::ReplicaSetSpec replica_spec(const ServingLoad& a, const serving::ServingLayout& lay) {
    serving::ReplicaSetSpec replicas;
    if (!a.router.empty()) {
        replicas.router = serving::router_from_name(a.router, "--router");
        if (a.dp == 1)
            fail("--router {} with one replica routes nothing (allowed: --dp 2 or more)", a.router);
    }
    replicas.dp = lay.dp;
    replicas.pp = lay.pp;
    replicas.disaggregated = lay.disaggregated;
    replicas.link = lay.kv_link;
    return replicas;
}

// The scheduler both placements run: --max-seqs, --step-tokens, the context; the modelled prefix
// cache needs token ids (sched/block_pool.h): --shared-prefix, or text prompts.
sched::SchedulerOptions scheduler_options(const ServingLoad& a, int64_t n_ctx,
                                          const std::vector<serving::ServingRequest>& reqs) {
    sched::SchedulerOptions so;
    so.n_parallel = a.parallel;
    so.step_token_budget = a.step_tokens;
    so.n_ctx = n_ctx;
    so.prefix_sharing = std::any_of(reqs.begin(), reqs.end(),
                                    [](const serving::ServingRequest& q) { return q.tokens != nullptr; });
    return so;
}

struct Placement {
    sim::Policy policy;
    graph::ModelShape shape;
};

// The baseline's and the target's placement and weights; with --host-profile the host CPU alone
// runs everything on both sides, on the file's weights as the engine reads them.
std::array<Placement, 2> placements(const ServingLoad& a, const BenchSetup& setup, const HostMachine& host,
                                    const format::GgufFile* gguf) {
    if (!host.device) return {Placement{setup.pb, setup.shape_b}, Placement{setup.pt, setup.shape_t}};
    graph::ModelShape host_shape = setup.shape_b;
    if (gguf) host_shape.weight_dtype = matmul_dtype_of(*gguf);
    std::printf("machine: %s from host profile %s (probed on %s, %s)\n", host.device->name().c_str(),
                a.host_profile.c_str(), host.device->profile().model.c_str(), host.device->profile().measured.c_str());
    return {Placement{sim::Policy::NPU_ONLY, host_shape}, Placement{sim::Policy::NPU_ONLY, host_shape}};
}

// Each device's share of the run it computed: the steps' device times the cost model summed, over
// `replicas` copies of the machine `hw` (one cost model times every replica's steps).
std::vector<DeviceBusy> busy_shares(const serving::StepCostModel& cost, const sim::SimHardware& hw,
                                    const std::string& prefix, double duration_s, int replicas) {
    std::vector<DeviceBusy> out;
    const std::vector<double>& busy = cost.device_busy_ns();
    for (size_t d = 0; d < hw.devices.size(); ++d) {
        const double ns = d < busy.size() ? busy[d] : 0.0;
        const double share = duration_s > 0 ? ns / 1e9 / duration_s / double(std::max(1, replicas)) : 0.0;
        out.push_back({prefix + hw.devices[d].name, hw.devices[d].kind, share});
    }
    return out;
}

// The context a request decodes at on average: its prompt and half its output.
int64_t mean_decode_context(const std::vector<serving::ServingRequest>& reqs) {
    double sum = 0;
    for (const serving::ServingRequest& q : reqs) sum += double(q.prompt_tokens) + double(q.output_tokens) / 2;
    return reqs.empty() ? 1 : std::max<int64_t>(1, std::llround(sum / double(reqs.size())));
}

// Everything both placements' runs share: the requests, the scheduler, the machine's layout.
struct SideRunner {
    const ServingBenchOptions& o;
    const config::CoopConfig& cfg;
    const TraceBenchInputs& in;
    const serving::ServingLayout& lay;
    const serving::ReplicaSetSpec& replicas;
    const sched::SchedulerOptions& so;
    const std::vector<serving::ServingRequest>& reqs;
    const serving::Slo& slo;
    const ArrivalSpec& spec;
    parallel::Communicator& comm;
    int sweep_width;

    // The KV cache of one instance: derived from its memory, or --kv-blocks (the other bytes still
    // count in the memory verdict when the memory is known).
    serving::KvCapacity capacity(const graph::ModelShape& shape, const sim::RunOptions& ro, const sim::SimHardware& h,
                                 const char* what) const {
        const ServingLoad& a = o.load;
        const int64_t step_tokens = std::max(a.step_tokens, a.parallel);
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
            if (ro.parallel.pp > 1)
                std::printf("  pipeline: %d virtual engines of %lld blocks each\n", ro.parallel.pp,
                            (long long)(kv.n_blocks / ro.parallel.pp));
        }
        if (kv.n_blocks < 1)
            fail("{} under {}{}: no device memory is left for the KV cache (allowed: a larger memory preset, or "
                 "--kv-blocks N)", in.model, sim::policy_name(ro.placement.policy), what);
        return kv;
    }

    // The side's instances: KV capacities and step-cost models (a prefill instance when disaggregated).
    serving::ReplicaSetSpec instances(ServingSide& s, const graph::ModelShape& shape) const {
        const sim::RunOptions ro = bench_run_options(cfg, s.policy, in);
        const sim::SimHardware& decode_hw = lay.disaggregated ? lay.decode_hw : lay.colocated_hw;
        s.kv = capacity(shape, ro, decode_hw, lay.disaggregated ? ", decode instance" : "");
        graph::GraphOptions go;  // --tp: each step as rank 0's graph with its collectives over its group
        go.tp = in.tp;
        go.pp = in.pp;  // --pp: every stage's graph, a step through them in turn
        go.ep = in.ep;
        go.flashcomm = in.flashcomm;
        s.cost = std::make_unique<serving::StepCostModel>(shape, ro, decode_hw, go);
        uint64_t kv_bytes_per_token = 0;
        if (lay.disaggregated) {  // the prefill instance: the same weights in NZ on its NPUs alone
            const sim::RunOptions pro = bench_run_options(cfg, sim::Policy::NPU_ONLY, in);
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
        return rs;
    }

    // One run of `rq` on the side's instances; `traced` records the first steps of each instance
    // into s.trace, `quiet` shows no progress.
    serving::ServingResult simulate(ServingSide& s, const serving::ReplicaSetSpec& rs,
                                    const std::vector<serving::ServingRequest>& rq, bool traced,
                                    bool quiet = false) const {
        const int64_t trace_cap = o.bench.trace_steps >= 0 ? o.bench.trace_steps : kMaxTraceSteps;
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
        serving::ServingResult res = serving::run_replica_set(rq, so, rs, observe, timed);
        if (progress && n_steps >= 2000) std::fprintf(stderr, "\r%60s\r", "");
        return res;
    }

    // --rate-sweep: the side's highest rate within the SLOs, the requests re-timed at each rate tried.
    serving::SweepResult sweep(ServingSide& s, const serving::ReplicaSetSpec& rs) const {
        auto at_rate = [&](double rate) {
            ArrivalSpec sp = spec;
            sp.rate_rps = rate;
            std::vector<serving::ServingRequest> rq = reqs;
            std::vector<size_t> open;  // requests arriving on their own (not an agent session's later calls)
            for (size_t k = 0; k < rq.size(); ++k)
                if (rq[k].after < 0) open.push_back(k);
            const std::vector<int64_t> t = arrival_times_ns(sp, int64_t(open.size()));
            for (size_t k = 0; k < open.size(); ++k) rq[open[k]].arrival_ns = t[k];
            return serving::summarize(simulate(s, rs, rq, false, true), slo);
        };
        return serving::rate_sweep_batched(sweep_spread(comm, at_rate), sweep_width,
                                           std::isinf(spec.rate_rps) ? 1.0 : spec.rate_rps, o.load.attainment, 4);
    }

    // One placement (`policy` on weights `shape`): the run, its summary and, asked for, the sweep.
    void run(ServingSide& s, sim::Policy policy, const graph::ModelShape& shape) const {
        s.policy = policy;
        const serving::ReplicaSetSpec rs = instances(s, shape);
        s.trace.assign(size_t(rs.instances()), {});
        s.result = simulate(s, rs, reqs, !o.bench.trace.empty());
        s.summary = serving::summarize(s.result, slo);
        s.expert_rows = s.cost->expert_rows();
        s.expert_rows_pim = s.cost->expert_rows_on_pim();
        const bool dis = lay.disaggregated;
        s.device_busy = busy_shares(*s.cost, dis ? lay.decode_hw : lay.colocated_hw, dis ? "decode " : "",
                                    s.summary.duration_s, lay.dp);
        if (s.prefill_cost) {
            const auto pre = busy_shares(*s.prefill_cost, lay.prefill_hw, "prefill ", s.summary.duration_s, lay.dp);
            s.device_busy.insert(s.device_busy.end(), pre.begin(), pre.end());
        }
        if (o.load.rate_sweep) s.sweep = sweep(s, rs);
        s.evaluations = s.cost->evaluations() + (s.prefill_cost ? s.prefill_cost->evaluations() : 0);
        s.lookups = s.cost->lookups() + (s.prefill_cost ? s.prefill_cost->lookups() : 0);
        s.pim_steps = s.cost->pim_steps();
        if (policy != sim::Policy::NPU_ONLY) {  // where the placement's crossover lies, at the mean decode context
            s.crossover_context = mean_decode_context(reqs);
            s.pim_last_batch = s.cost->last_pim_matmul_batch(s.crossover_context, o.load.parallel);
        }
    }
};

}  // namespace

bool run_serving_bench(const ServingBenchOptions& o) {
    const ServingLoad& a = o.load;
    const auto t0 = std::chrono::steady_clock::now();
    // Under mpirun every rank runs the same deterministic simulation; --rate-sweep spreads its rates
    // over them (sweep_spread). Rank 0 alone prints and writes files.
    const std::unique_ptr<parallel::Communicator> comm = parallel::make_world_communicator();
    const bool root = comm->rank() == 0;
    if (!root && !std::freopen("/dev/null", "w", stdout)) fail("rank {}: cannot silence its output", comm->rank());
    const int sweep_width = int(a.sweep_width > 0 ? a.sweep_width : comm->size());
    const config::EnvMap env = config::process_env();
    const config::Settings st = config::load_settings(o.bench.settings_path, env, known_soc_names());
    config::CoopConfig cfg = config::load_coop_config(o.bench.config_path, env);
    cfg.topology = topology_from_flags(cfg.topology, o.bench.topology, o.bench.npus, o.bench.pims);
    check_machine_options(o, cfg);
    const ArrivalSpec spec{parse_rate(a.rate), a.burstiness, uint64_t(a.seed)};
    const serving::Slo slo{a.slo_ttft_ms, a.slo_tpot_ms};
    check_sweep_options(o, slo);

    TraceBenchInputs in = serving_inputs(o, st);
    const ServingModel m = open_serving_model(in.model);
    const int64_t ep = o.bench.ep != -1 ? o.bench.ep : cfg.topology.ep;
    set_expert_inputs(in, int(ep), o.bench.expert_skew, o.bench.routing_stats, st.runtime.dtype);
    const BenchSetup setup = prepare_bench(st, cfg, in, /*file_mode=*/false);
    check_one_expert_group(in, a.dp, setup.rig->hw);

    const int64_t n_ctx = a.ctx != -1 ? a.ctx : m.hp.n_ctx_train;
    if (n_ctx < 2) fail("{} states no trained context (allowed: --ctx N)", in.model);
    const ServingRequests r = load_requests(o, in, spec, n_ctx, m.gguf.get());
    const std::string arrivals = std::isinf(spec.rate_rps)
                                     ? std::string("all at t = 0")
                                     : fmt::format("{} req/s, burstiness {} (seed {})", a.rate, a.burstiness, a.seed);

    const sched::SchedulerOptions so = scheduler_options(a, n_ctx, r.reqs);
    const HostMachine host = host_machine(a, setup.rig->hw);
    const sim::SimHardware& hw = host.device ? host.hw : setup.rig->hw;
    const serving::ServingLayout lay =
        serving::serving_layout(hw, int(a.dp), int(o.bench.tp), a.disaggregate, int(o.bench.pp), int(in.ep));
    const serving::ReplicaSetSpec replicas = replica_spec(a, lay);
    print_header(a, in.model, r.reqs.size(), r.source, arrivals, n_ctx, lay, replicas.router);
    const std::array<Placement, 2> runs = placements(a, setup, host, m.gguf.get());
    const SideRunner runner{o, cfg, in, lay, replicas, so, r.reqs, slo, spec, *comm, sweep_width};
    ServingSide sides[2];
    for (int i = 0; i < 2; ++i) runner.run(sides[i], runs[i].policy, runs[i].shape);
    print_table(sides[0], sides[1], lay);
    const std::vector<sim::Verdict> verdicts = judge_serving(sides[0], sides[1], o.bench.th);
    print_results(a, o.bench.svg, in, sides, verdicts, slo, sweep_width, *comm);
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("step compositions timed: %lld and %lld of %lld and %lld steps (%.2f s wall)\n",
                (long long)sides[0].evaluations, (long long)sides[1].evaluations, (long long)sides[0].lookups,
                (long long)sides[1].lookups, wall_s);
    if (!o.bench.report.empty() && root) {
        const nlohmann::json workload =
            workload_json(a, r.source, r.reqs.size(), spec, n_ctx, lay, replicas.router);
        nlohmann::json j = {{"schema", "duet.serving/1"},
                            {"model", in.model},
                            {"workload", workload},
                            {"serving", {{"baseline", side_json(sides[0], lay, experts_json(sides[0], in))},
                                         {"target", side_json(sides[1], lay, experts_json(sides[1], in))}}},
                            {"verdicts", sim::verdicts_to_json(verdicts)},
                            {"config", config_json(st, cfg)},
                            {"topology", topology_json(hw)}};
        sim::write_file_atomic(o.bench.report, j.dump(2) + "\n");
        std::printf("report: %s\n", o.bench.report.c_str());
    }
    if (!o.bench.trace.empty() && root) write_trace(o.bench.trace, sides, replicas);
    return std::all_of(verdicts.begin(), verdicts.end(), [](const sim::Verdict& v) { return v.met; });
}

}  // namespace duet::workload
