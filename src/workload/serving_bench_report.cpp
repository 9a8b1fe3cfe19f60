#include "workload/serving_bench_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>

#include "sim/report_files.h"

namespace duet::workload {

std::string gib(uint64_t b) { return fmt::format("{:.2f} GiB", double(b) / double(uint64_t(1) << 30)); }

namespace {

// The role of a device in ServingSide::device_busy: "decode ", "prefill " or "" (colocated).
std::string role_of(const std::string& name) {
    const size_t sp = name.find(' ');
    return sp == std::string::npos ? "" : name.substr(0, sp + 1);
}

// "NPU busy", "decode PIM busy", ...: each role and device kind's mean busy share, both sides
// ("-" where a side has no such device; the count when the mean is over several).
template <class Row>
void print_busy_rows(const ServingSide& b, const ServingSide& t, Row&& row) {
    std::vector<std::pair<std::string, sim::DeviceKind>> groups;
    for (const ServingSide* s : {&b, &t})
        for (const DeviceBusy& d : s->device_busy) {
            const std::pair<std::string, sim::DeviceKind> g{role_of(d.name), d.kind};
            if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
        }
    for (const auto& [role, kind] : groups) {
        auto mean = [&](const ServingSide& s) {
            double sum = 0;
            int n = 0;
            for (const DeviceBusy& d : s.device_busy)
                if (d.kind == kind && role_of(d.name) == role) sum += d.share, ++n;
            if (n == 0) return std::string("-");
            return n == 1 ? fmt::format("{:.1f}%", 100 * sum) : fmt::format("{:.1f}% ({})", 100 * sum / n, n);
        };
        std::string kind_name = sim::device_kind_name(kind);
        std::transform(kind_name.begin(), kind_name.end(), kind_name.begin(), ::toupper);
        row((role + kind_name + " busy").c_str(), mean(b), mean(t));
    }
}

}  // namespace

void print_table(const ServingSide& b, const ServingSide& t, const serving::ServingLayout& lay) {
    const serving::ServingSummary &x = b.summary, &y = t.summary;
    auto row = [](const char* name, const std::string& u, const std::string& v) {
        std::printf("  %-24s %20s %20s\n", name, u.c_str(), v.c_str());
    };
    auto num = [](double v, int prec = 2) { return fmt::format("{:.{}f}", v, prec); };
    auto dist = [&](const char* name, const serving::Dist& u, const serving::Dist& v) {
        row(fmt::format("{} p50", name).c_str(), num(u.p50), num(v.p50));
        row(fmt::format("{} p90", name).c_str(), num(u.p90), num(v.p90));
        row(fmt::format("{} p99", name).c_str(), num(u.p99), num(v.p99));
        row(fmt::format("{} mean", name).c_str(), num(u.mean), num(v.mean));
    };
    row("", sim::policy_name(b.policy), sim::policy_name(t.policy));
    row("completed requests", std::to_string(x.completed), std::to_string(y.completed));
    row("duration (s)", num(x.duration_s, 3), num(y.duration_s, 3));
    row("requests/s", num(x.requests_per_s, 3), num(y.requests_per_s, 3));
    row("goodput (req/s)", num(x.goodput_rps, 3), num(y.goodput_rps, 3));
    row("output tokens/s", num(x.output_tokens_per_s, 1), num(y.output_tokens_per_s, 1));
    row("total tokens/s", num(x.total_tokens_per_s, 1), num(y.total_tokens_per_s, 1));
    dist("TTFT ms", x.ttft_ms, y.ttft_ms);
    dist("TPOT ms", x.tpot_ms, y.tpot_ms);
    dist("E2E ms", x.e2e_ms, y.e2e_ms);
    dist("queue ms", x.queue_ms, y.queue_ms);
    row("preemptions", std::to_string(x.preemptions), std::to_string(y.preemptions));
    if (x.cached_prompt_tokens + y.cached_prompt_tokens > 0)
        row("prompt tokens cached", std::to_string(x.cached_prompt_tokens), std::to_string(y.cached_prompt_tokens));
    row("steps", std::to_string(x.steps), std::to_string(y.steps));
    row("peak running seqs", std::to_string(x.peak_running), std::to_string(y.peak_running));
    row("peak KV blocks used", std::to_string(x.peak_kv_blocks_used), std::to_string(y.peak_kv_blocks_used));
    print_busy_rows(b, t, row);
    if (lay.dp > 1 || lay.disaggregated) {
        // Per replica, " / " between replicas: requests routed and the share of the run each part was busy.
        auto per = [&](const ServingSide& s, auto f) {
            std::string out;
            for (const serving::ReplicaStats& r : s.result.replicas) out += (out.empty() ? "" : " / ") + f(r);
            return out;
        };
        auto pct = [](const ServingSide& s, int64_t ns) {
            return fmt::format("{:.0f}%", s.summary.duration_s > 0 ? 100.0 * double(ns) / 1e9 / s.summary.duration_s : 0);
        };
        auto both = [&](const char* name, auto f) { row(name, per(b, [&](auto& r) { return f(b, r); }), per(t, [&](auto& r) { return f(t, r); })); };
        if (lay.dp > 1) both("requests per replica", [](const ServingSide&, const serving::ReplicaStats& r) { return std::to_string(r.requests); });
        both(lay.disaggregated ? "prefill busy" : "busy", [&](const ServingSide& s, const serving::ReplicaStats& r) { return pct(s, r.prefill.busy_ns); });
        if (lay.disaggregated) {
            both("decode busy", [&](const ServingSide& s, const serving::ReplicaStats& r) { return pct(s, r.decode.busy_ns); });
            both("KV link busy", [&](const ServingSide& s, const serving::ReplicaStats& r) { return pct(s, r.link_busy_ns); });
            auto mean_xfer = [](const ServingSide& s) {
                double sum = 0;
                int64_t n = 0;
                for (const serving::RequestOutcome& o : s.result.requests)
                    if (o.kv_transfer_ns >= 0) sum += double(o.kv_transfer_ns) / 1e6, ++n;
                return n ? sum / double(n) : 0.0;
            };
            row("KV transfer ms mean", num(mean_xfer(b), 3), num(mean_xfer(t), 3));
        }
    }
    if (x.refused + y.refused + x.ended_early + y.ended_early > 0) {
        row("refused (too long)", std::to_string(x.refused), std::to_string(y.refused));
        row("ended early (KV)", std::to_string(x.ended_early), std::to_string(y.ended_early));
    }
}

// Peak device memory of a replica: everything but the KV cache (of both instances when
// disaggregated), plus the KV blocks in use at the peak of the fullest instance.
double peak_memory_bytes(const ServingSide& s) {
    return double(s.kv.other_bytes) + double(s.prefill_kv.other_bytes) +
           double(s.summary.peak_kv_blocks_used) * double(s.kv.block_bytes);
}

// The three verdicts of `duet bench` (sim/report.h) judged at the load given: TPOT for TBT, mean
// TTFT (queueing included), peak device memory (KV blocks in use at the peak).
std::vector<sim::Verdict> judge_serving(const ServingSide& b, const ServingSide& t, const sim::Thresholds& th) {
    std::vector<sim::Verdict> out;
    sim::Verdict v;
    v.name = "tbt_reduction";
    v.threshold = th.tbt_reduction_min;
    const double tb = b.summary.tpot_ms.mean;
    v.value = tb > 0 ? 1 - t.summary.tpot_ms.mean / tb : 0;
    v.met = v.value >= v.threshold;
    v.binding_limit = fmt::format("PIM computed in {:.0f} % of the target's steps; the others carried a prompt chunk "
                                  "or more decode sequences than PIM pays for, and ran on the NPU",
                                  t.lookups > 0 ? 100.0 * double(t.pim_steps) / double(t.lookups) : 0.0);
    v.line = fmt::format("TPOT reduction    {:6.1f} %   (required >= {:.0f} %)   {}", 100 * v.value, 100 * v.threshold,
                         v.met ? "MET" : "NOT MET: " + v.binding_limit);
    out.push_back(v);
    v = {};
    v.name = "ttft_increase_ms";
    v.threshold = th.ttft_increase_max_ms;
    v.value = t.summary.ttft_ms.mean - b.summary.ttft_ms.mean;
    v.met = v.value < v.threshold;
    v.binding_limit = fmt::format("mean queueing {:.2f} ms against {:.2f} ms", t.summary.queue_ms.mean,
                                  b.summary.queue_ms.mean);
    v.line = fmt::format("TTFT increase     {:6.2f} ms  (required < {:.0f} ms)    {}", v.value, v.threshold,
                         v.met ? "MET" : "NOT MET: " + v.binding_limit);
    out.push_back(v);
    v = {};
    v.name = "memory_increase";
    v.threshold = th.memory_increase_max;
    const double mb = peak_memory_bytes(b);
    v.value = mb > 0 ? peak_memory_bytes(t) / mb - 1 : 0;
    v.met = v.value < v.threshold;
    v.binding_limit = fmt::format("weights, block index and conversion cache {} against {}", gib(t.kv.other_bytes),
                                  gib(b.kv.other_bytes));
    v.line = fmt::format("Memory increase   {:6.2f} %   (required < {:.0f} %)     {}", 100 * v.value,
                         100 * v.threshold, v.met ? "MET" : "NOT MET: " + v.binding_limit);
    out.push_back(v);
    return out;
}

nlohmann::json side_json(const ServingSide& s, const serving::ServingLayout& lay, const nlohmann::json& experts) {
    nlohmann::json j = serving::summary_to_json(s.summary);
    j["device_busy_share"] = nlohmann::json::object();
    for (const DeviceBusy& d : s.device_busy) j["device_busy_share"][d.name] = d.share;
    j["experts"] = experts;
    j["policy"] = sim::policy_name(s.policy);
    j["kv_cache"] = serving::kv_capacity_json(s.kv);
    j["step_times"] = {{"compositions_timed", s.evaluations}, {"steps_looked_up", s.lookups},
                       {"steps_with_pim", s.pim_steps}};
    j["peak_memory_bytes"] = peak_memory_bytes(s);
    j["per_request"] = serving::requests_to_json(s.result);
    j["replicas"] = serving::replicas_to_json(s.result, s.summary.duration_s, lay.disaggregated);
    if (lay.disaggregated) j["prefill_kv_cache"] = serving::kv_capacity_json(s.prefill_kv);
    if (!s.sweep.points.empty()) j["rate_sweep"] = serving::sweep_to_json(s.sweep);
    j["pim_crossover"] = s.pim_last_batch < 0 ? nlohmann::json(nullptr)
                                              : nlohmann::json{{"context", s.crossover_context},
                                                               {"last_pim_batch", s.pim_last_batch}};
    return j;
}

// The routed experts' rows of the run's steps and the share PIM computed (report "experts").
nlohmann::json experts_json(const ServingSide& s, const TraceBenchInputs& in) {
    if (!in.routing || s.expert_rows <= 0) return nullptr;
    return {{"ep", in.ep},
            {"routing", in.routing->source},
            {"expert_rows", s.expert_rows},
            {"expert_rows_on_pim", s.expert_rows_pim},
            {"pim_row_share", s.expert_rows_pim / s.expert_rows}};
}

// The lines above the table: the workload, and the instances the machine is split into.
void print_header(const ServingLoad& a, const std::string& model, size_t n_requests, const std::string& source,
                  const std::string& arrivals, int64_t n_ctx, const serving::ServingLayout& lay,
                  serving::RouterPolicy router) {
    std::printf("serving: %s, %zu requests (%s; arrivals %s), context %lld, max %lld seqs, %lld tokens per step\n",
                model.c_str(), n_requests, source.c_str(), arrivals.c_str(), (long long)n_ctx,
                (long long)a.parallel, (long long)a.step_tokens);
    if (lay.disaggregated)
        std::printf("disaggregated: prefill on %s (npu_only), decode on %s; KV %sover %s (%s: %g GB/s, %g ns latency "
                    "+ %g ns per transfer)\n", lay.prefill_devices().c_str(), lay.decode_devices().c_str(),
                    lay.tp > 1 ? "shards, rank to rank, " : "", lay.kv_link.name.c_str(), lay.kv_link.preset.c_str(),
                    lay.kv_link.bandwidth_gbps, lay.kv_link.latency_ns, lay.kv_link.per_transfer_ns);
    if (lay.dp > 1) std::printf("replicas: %d behind the %s router\n", lay.dp, serving::router_name(router));
    if (lay.pp > 1)
        std::printf("pipeline: %d stages, %d virtual engines (each its own scheduler over 1/%d of the KV blocks; a "
                    "step holds the pipeline's entry for its slowest stage)\n", lay.pp, lay.pp, lay.pp);
    if (lay.split)
        for (int r = 0; r < lay.dp; ++r)
            std::printf("  replica %d: %s\n", r, lay.replica_devices[size_t(r)].c_str());
}

// The lines below the table: experts, verdicts, SLOs and the rate sweep (its chart on rank 0).
void print_results(const ServingLoad& a, const std::string& svg, const TraceBenchInputs& in,
                   const ServingSide (&sides)[2], const std::vector<sim::Verdict>& verdicts, const serving::Slo& slo,
                   int sweep_width, const parallel::Communicator& comm) {
    for (const ServingSide& s : sides)
        if (const nlohmann::json e = experts_json(s, in); !e.is_null())
            std::printf("experts (%s): ep %d, routing %s: %.1f %% of the routed expert rows on PIM\n",
                        sim::policy_name(s.policy), in.ep, in.routing->source.c_str(),
                        100 * e["pim_row_share"].get<double>());
    for (const ServingSide& s : sides)
        if (s.pim_last_batch == 0)
            std::printf("PIM crossover (%s): at %lld positions even one decoding sequence runs its weight matmuls on "
                        "the NPU\n", sim::policy_name(s.policy), (long long)s.crossover_context);
        else if (s.pim_last_batch > 0)
            std::printf("PIM crossover (%s): at %lld positions decode steps of up to %lld sequences run weight "
                        "matmuls on PIM%s\n", sim::policy_name(s.policy), (long long)s.crossover_context,
                        (long long)s.pim_last_batch,
                        s.pim_last_batch >= a.parallel ? " (every batch up to --max-seqs)" : "; larger batches on the NPU");
    for (const sim::Verdict& v : verdicts) std::printf("%s\n", v.line.c_str());
    if (a.slo_ttft_ms >= 0 || a.slo_tpot_ms >= 0)
        std::printf("goodput SLOs: TTFT <= %s ms, TPOT <= %s ms\n",
                    a.slo_ttft_ms >= 0 ? fmt::format("{:g}", a.slo_ttft_ms).c_str() : "any",
                    a.slo_tpot_ms >= 0 ? fmt::format("{:g}", a.slo_tpot_ms).c_str() : "any");
    if (!a.rate_sweep) return;
    std::printf("rate sweep: %d rate%s per round, on %d rank%s (%s)\n", sweep_width, sweep_width == 1 ? "" : "s",
                comm.size(), comm.size() == 1 ? "" : "s", comm.kind());
    for (const ServingSide& s : sides) {
        std::printf("rate sweep (%s): highest rate within the SLOs (%.0f%% of requests): %.3g req/s\n",
                    sim::policy_name(s.policy), a.attainment * 100, s.sweep.max_rate_rps);
        for (const serving::SweepPoint& p : s.sweep.points)
            std::printf("  %10.4g req/s offered: %8.3f achieved, p99 TTFT %9.2f ms, p99 TPOT %8.2f ms, %s\n",
                        p.rate_rps, p.summary.requests_per_s, p.summary.ttft_ms.p99, p.summary.tpot_ms.p99,
                        p.meets ? "meets" : "misses");
    }
    if (!svg.empty() && comm.rank() == 0) {
        sim::write_file_atomic(svg, serving::sweep_svg(in.model + ": latency against throughput",
                                                         {sim::policy_name(sides[0].policy),
                                                          sim::policy_name(sides[1].policy)},
                                                         {sides[0].sweep, sides[1].sweep}, slo));
        std::printf("chart: %s\n", svg.c_str());
    }
}

// The report's "workload" object: what was served, on what machine layout, under which SLOs.
nlohmann::json workload_json(const ServingLoad& a, const std::string& source, size_t n_requests,
                             const ArrivalSpec& spec, int64_t n_ctx, const serving::ServingLayout& lay,
                             serving::RouterPolicy router) {
    return {{"source", source},
            {"requests", n_requests},
            {"rate_rps", std::isinf(spec.rate_rps) ? nlohmann::json("inf") : nlohmann::json(spec.rate_rps)},
            {"burstiness", a.burstiness},
            {"seed", a.seed},
            {"context", n_ctx},
            {"max_seqs", a.parallel},
            {"step_tokens", a.step_tokens},
            {"dp", a.dp},
            {"tp", lay.tp},
            {"ep", lay.ep},
            {"pp", lay.pp},
            {"router", serving::router_name(router)},
            {"disaggregated", lay.disaggregated},
            {"kv_link", lay.disaggregated ? nlohmann::json{{"name", lay.kv_link.name},
                                                           {"preset", lay.kv_link.preset},
                                                           {"bandwidth_gbps", lay.kv_link.bandwidth_gbps},
                                                           {"latency_ns", lay.kv_link.latency_ns},
                                                           {"per_transfer_ns", lay.kv_link.per_transfer_ns}}
                                          : nlohmann::json(nullptr)},
            {"slo_ttft_ms", a.slo_ttft_ms >= 0 ? nlohmann::json(a.slo_ttft_ms) : nlohmann::json(nullptr)},
            {"slo_tpot_ms", a.slo_tpot_ms >= 0 ? nlohmann::json(a.slo_tpot_ms) : nlohmann::json(nullptr)}};
}

// --trace: each instance's recorded steps as a track, baseline's first.
void write_trace(const std::string& path, const ServingSide (&sides)[2], const serving::ReplicaSetSpec& replicas) {
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
    sim::write_file_atomic(path, serving::steps_trace_json(names, tracks).dump());
    std::printf("trace: %s (%zu and %zu steps; open in ui.perfetto.dev)\n", path.c_str(), n_steps[0], n_steps[1]);
}

}  // namespace duet::workload
