// JSON form of the bench report (docs/report-schema.md, schema "duet.bench/1") and the table.
#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "sim/report.h"

namespace duet::sim {
namespace {

using nlohmann::json;

json memory_json(const MemoryBreakdown& m) {
    json j = {{"weights_bytes", m.weights_bytes},       {"weights_pim_base_bytes", m.weights_pim_base_bytes},
              {"block_index_bytes", m.block_index_bytes},
              {"kv_cache_bytes", m.kv_cache_bytes},     {"activations_bytes", m.activations_bytes},
              {"conversion_bytes", m.conversion_bytes}, {"workspace_bytes", m.workspace_bytes},
              {"total_bytes", m.total_bytes()}};
    if (m.weights_experts_bytes > 0) {  // Mixture-of-Experts: routed experts vs weights every token reads
        j["weights_experts_bytes"] = m.weights_experts_bytes;
        j["weights_shared_bytes"] = m.weights_bytes - m.weights_experts_bytes;
    }
    if (m.kv_cache_latent) j["kv_cache_latent"] = true;
    return j;
}

json device_json(const DeviceStats& u) {
    return {{"busy_ns", u.busy_ns}, {"bytes_moved", u.bytes_moved}, {"weight_bytes", u.weight_bytes}, {"energy_pj", u.energy_pj},
            {"launch_ns", u.launch_ns}, {"ops", u.ops}, {"comm_ns", u.comm_ns}, {"exposed_comm_ns", u.exposed_comm_ns}};
}
DeviceStats device_from(const json& j) {
    DeviceStats u;
    u.busy_ns = j.at("busy_ns");
    u.bytes_moved = j.at("bytes_moved");
    u.weight_bytes = j.at("weight_bytes");
    u.energy_pj = j.at("energy_pj");
    u.launch_ns = j.at("launch_ns");
    u.ops = j.at("ops");
    u.comm_ns = j.value("comm_ns", 0.0);  // absent in reports written before scale-out
    u.exposed_comm_ns = j.value("exposed_comm_ns", 0.0);
    return u;
}
// "npu", "pim" and "cpu": totals over the devices of the kind; "devices": one entry per device, in
// SimHardware order, named npu0, pim0, pim1, ...
json phase_json(const PhaseStats& p) {
    json devices = json::array();
    for (const DeviceStats& d : p.device) {
        json e = device_json(d);
        e["name"] = d.name;
        e["kind"] = device_kind_name(d.kind);
        devices.push_back(e);
    }
    return {{"wall_ns", p.wall_ns}, {"step_host_ns", p.step_host_ns}, {"npu", device_json(p.npu())}, {"pim", device_json(p.pim())},
            {"cpu", device_json(p.total(DeviceKind::CPU))}, {"devices", devices}};
}
PhaseStats phase_from(const json& j) {
    PhaseStats p;
    p.wall_ns = j.at("wall_ns");
    p.step_host_ns = j.value("step_host_ns", 0.0);  // absent in reports written before it existed
    for (const json& e : j.at("devices")) {
        DeviceStats d = device_from(e);
        d.name = e.at("name").get<std::string>();
        const std::string kind = e.at("kind").get<std::string>();
        if (kind != "npu" && kind != "pim" && kind != "cpu")
            fail("device {} has kind \"{}\" (allowed: npu, pim, cpu)", d.name, kind);
        d.kind = kind == "npu" ? DeviceKind::NPU : kind == "pim" ? DeviceKind::PIM : DeviceKind::CPU;
        p.device.push_back(d);
    }
    return p;
}
json links_json(const std::vector<LinkStats>& links) {
    json out = json::array();
    for (const LinkStats& l : links)
        out.push_back({{"name", l.name}, {"busy_ns", l.busy_ns}, {"bytes", l.bytes}, {"transfers", l.transfers}});
    return out;
}
std::vector<LinkStats> links_from(const json& j) {
    std::vector<LinkStats> out;
    for (const json& e : j)
        out.push_back({e.at("name").get<std::string>(), e.at("busy_ns").get<double>(), e.at("bytes").get<double>(),
                       e.at("transfers").get<int64_t>()});
    return out;
}

RunReport run_from(const json& j) {
    RunReport r;
    r.policy = j.at("policy");
    r.batch = j.at("batch");
    r.weight_base_shared = j.at("weight_base_shared");
    const json& t = j.at("timeline");
    Timeline& tl = r.timeline;
    tl.prefill_ns = t.at("prefill_ns");
    tl.switch_ns = t.at("switch_ns");
    tl.ttft_ns = t.at("ttft_ns");
    tl.tbt_ns = t.at("tbt_ns").get<std::vector<double>>();
    tl.conversion_ns = t.at("conversion_ns");
    tl.conversion_exposed_ns = t.at("conversion_exposed_ns");
    tl.conversion_bytes_read = t.at("conversion_bytes_read");
    tl.conversion_energy_pj = t.at("conversion_energy_pj");
    tl.conversions = t.at("conversions");
    tl.pim_matmul_parts = t.value("pim_matmul_parts", int64_t(0));
    tl.prefill = phase_from(t.at("prefill"));
    tl.decode = phase_from(t.at("decode"));
    tl.links = links_from(t.at("links"));
    const json& m = j.at("memory");
    r.memory.weights_bytes = m.at("weights_bytes");
    r.memory.weights_pim_base_bytes = m.at("weights_pim_base_bytes");
    r.memory.block_index_bytes = m.at("block_index_bytes");
    r.memory.kv_cache_bytes = m.at("kv_cache_bytes");
    r.memory.activations_bytes = m.at("activations_bytes");
    r.memory.conversion_bytes = m.at("conversion_bytes");
    r.memory.workspace_bytes = m.at("workspace_bytes");
    r.memory.weights_experts_bytes = m.value("weights_experts_bytes", uint64_t(0));
    r.memory.kv_cache_latent = m.value("kv_cache_latent", false);
    r.tbt_mean_ns = j.at("tbt_mean_ns");
    r.tbt_p50_ns = j.at("tbt_p50_ns");
    r.tbt_p99_ns = j.at("tbt_p99_ns");
    r.decode_energy_per_token_pj = j.at("decode_energy_per_token_pj");
    r.prefill_energy_pj = j.at("prefill_energy_pj");
    r.decode_ext_bw_gbps = j.at("decode_ext_bw_gbps");
    r.decode_ext_bw_util = j.at("decode_ext_bw_util");
    r.pim_util = j.at("pim_util");
    r.pim_internal_bw_util = j.at("pim_internal_bw_util");
    r.pim_gemv_gbps = j.at("pim_gemv_gbps");
    r.warnings = j.at("warnings").get<std::vector<std::string>>();
    if (j.contains("experts")) r.experts = j.at("experts");
    return r;
}

// What each device kind's energy figure is (docs/report-schema.md "energy_basis"): the NPU's is its
// TDP times its busy time, an upper bound; the PIM's is counted per DRAM command from the memory
// preset's [energy] (array reads at the PIM preset's array_read_pj_per_bit, else at the external
// read energy: an upper bound), or not modelled when the preset has none; conversions pay their
// extra bytes at a per-byte energy.
std::string pim_energy_basis(const RunReport& r) {
    const DeviceStats pre = r.timeline.prefill.pim(), dec = r.timeline.decode.pim();
    if (pre.busy_ns + dec.busy_ns <= 0) return "unused";
    return pre.energy_pj + dec.energy_pj > 0 ? "per_command" : "not_modelled";
}

json energy_basis_json(const RunReport& r) {
    return {{"npu", "tdp_x_busy_upper_bound"}, {"pim", pim_energy_basis(r)}, {"conversion", "extra_bytes_x_pj_per_byte"}};
}

// Decode energy per token of one device kind (the parts of decode_energy_per_token_pj).
double decode_energy_per_token_pj(const RunReport& r, DeviceKind kind) {
    const double tokens = double(r.timeline.tbt_ns.size()) * double(r.batch);
    return tokens > 0 ? r.timeline.decode.total(kind).energy_pj / tokens : 0;
}

// The ranks' axes of the "parallel:" line: tp x pp, with x ep for expert parallelism over
// data-parallel attention, tp (= ep) when the experts sit on the tensor-parallel ranks, or the
// tensor-parallel groups inside data-parallel attention (tp dividing ep).
std::string parallel_axes(const nlohmann::json& p) {
    const int tp = p.value("tp", 1), pp = p.value("pp", 1), ep = p.value("ep", 1);
    if (tp > 1 && ep > tp)
        return fmt::format("{} attention groups of tp {} = ep {} x pp {}", ep / tp, tp, ep, pp);
    if (tp > 1 && ep > 1) return fmt::format("tp {} = ep {} (the same ranks) x pp {}", tp, ep, pp);
    return fmt::format("tp {} x pp {}{}", tp, pp, ep > 1 ? fmt::format(" x ep {}", ep) : "");
}

}  // namespace

std::vector<std::string> devices_used(const RunReport& r) {
    std::vector<std::string> out;
    const PhaseStats& pre = r.timeline.prefill;
    const PhaseStats& dec = r.timeline.decode;
    for (size_t d = 0; d < std::max(pre.device.size(), dec.device.size()); ++d) {
        const int64_t ops = (d < pre.device.size() ? pre.device[d].ops : 0) + (d < dec.device.size() ? dec.device[d].ops : 0);
        if (ops > 0) out.push_back(d < pre.device.size() ? pre.device[d].name : dec.device[d].name);
    }
    return out;
}

json run_to_json(const RunReport& r) {
    const Timeline& tl = r.timeline;
    json j = {{"policy", r.policy},
            {"batch", r.batch},
            {"weight_base_shared", r.weight_base_shared},
            {"timeline",
             {{"prefill_ns", tl.prefill_ns}, {"switch_ns", tl.switch_ns}, {"ttft_ns", tl.ttft_ns}, {"tbt_ns", tl.tbt_ns},
              {"conversion_ns", tl.conversion_ns}, {"conversion_exposed_ns", tl.conversion_exposed_ns},
              {"conversion_bytes_read", tl.conversion_bytes_read}, {"conversion_energy_pj", tl.conversion_energy_pj},
              {"conversions", tl.conversions}, {"pim_matmul_parts", tl.pim_matmul_parts},
              {"prefill", phase_json(tl.prefill)}, {"decode", phase_json(tl.decode)},
              {"links", links_json(tl.links)}}},
            {"memory", memory_json(r.memory)},
            {"tbt_mean_ns", r.tbt_mean_ns},
            {"tbt_p50_ns", r.tbt_p50_ns},
            {"tbt_p99_ns", r.tbt_p99_ns},
            {"decode_energy_per_token_pj", r.decode_energy_per_token_pj},
            {"prefill_energy_pj", r.prefill_energy_pj},
            {"energy_basis", energy_basis_json(r)},
            {"decode_ext_bw_gbps", r.decode_ext_bw_gbps},
            {"decode_ext_bw_util", r.decode_ext_bw_util},
            {"pim_util", r.pim_util},
            {"pim_internal_bw_util", r.pim_internal_bw_util},
            {"pim_gemv_gbps", r.pim_gemv_gbps},
            {"devices_used", devices_used(r)},
            {"warnings", r.warnings}};
    if (!r.experts.is_null()) j["experts"] = r.experts;
    return j;
}

json verdicts_to_json(const std::vector<Verdict>& vs) {
    json a = json::array();
    for (const Verdict& v : vs)
        a.push_back({{"name", v.name}, {"value", v.value}, {"threshold", v.threshold}, {"met", v.met},
                     {"binding_limit", v.met ? "" : v.binding_limit}, {"line", v.line}});
    return a;
}

std::vector<Verdict> verdicts_from_json(const json& a) {
    std::vector<Verdict> out;
    for (const json& v : a)
        out.push_back({v.at("name"), v.at("value"), v.at("threshold"), v.at("met"), v.at("binding_limit"), v.at("line")});
    return out;
}

json report_to_json(const BenchReport& r) {
    const json verdicts = verdicts_to_json(r.verdicts);
    nlohmann::json j = {{"schema", "duet.bench/1"},
            {"model", r.model},
            {"seq_len", r.seq_len},
            {"gen_len", r.gen_len},
            {"batch", r.batch},
            {"devices", {{"npu", r.npu}, {"pim", r.pim}, {"memory", r.memory}}},
            {"topology", r.topology},
            {"thresholds",
             {{"tbt_reduction_min", r.thresholds.tbt_reduction_min},
              {"ttft_increase_max_ms", r.thresholds.ttft_increase_max_ms},
              {"memory_increase_max", r.thresholds.memory_increase_max}}},
            {"config", r.config},
            {"baseline", run_to_json(r.baseline)},
            {"target", run_to_json(r.target)},
            {"verdicts", verdicts}};
    if (!r.functional.is_null()) j["functional"] = r.functional;
    if (!r.parallel.is_null()) j["parallel"] = r.parallel;
    if (!r.pim_precision.is_null()) j["pim_precision"] = r.pim_precision;
    return j;
}

BenchReport report_from_json(const json& j) {
    try {
        if (j.at("schema") != "duet.bench/1") fail("report schema {} is not duet.bench/1", j.at("schema").dump());
        BenchReport r;
        r.model = j.at("model");
        r.seq_len = j.at("seq_len");
        r.gen_len = j.at("gen_len");
        r.batch = j.at("batch");
        r.npu = j.at("devices").at("npu");
        r.pim = j.at("devices").at("pim");
        r.memory = j.at("devices").at("memory");
        r.topology = j.at("topology");
        r.thresholds.tbt_reduction_min = j.at("thresholds").at("tbt_reduction_min");
        r.thresholds.ttft_increase_max_ms = j.at("thresholds").at("ttft_increase_max_ms");
        r.thresholds.memory_increase_max = j.at("thresholds").at("memory_increase_max");
        r.config = j.at("config");
        if (j.contains("functional")) r.functional = j.at("functional");
        if (j.contains("parallel")) r.parallel = j.at("parallel");
        if (j.contains("pim_precision")) r.pim_precision = j.at("pim_precision");
        r.baseline = run_from(j.at("baseline"));
        r.target = run_from(j.at("target"));
        r.verdicts = verdicts_from_json(j.at("verdicts"));
        return r;
    } catch (const nlohmann::json::exception& e) {
        fail("bench report: {}", e.what());
    }
}

std::string format_table(const BenchReport& r) {
    const RunReport& b = r.baseline;
    const RunReport& t = r.target;
    std::string s;
    auto row = [&](const std::string& name, const std::string& a, const std::string& c, const std::string& note = "") {
        s += fmt::format("  {:<30} {:>16} {:>16}  {}\n", name, a, c, note);
    };
    auto ms = [](double ns) { return fmt::format("{:.3f} ms", ns / 1e6); };
    auto mib = [](uint64_t bytes) { return fmt::format("{:.1f} MiB", double(bytes) / (1 << 20)); };
    auto ratio = [](double a, double c) { return a > 0 ? fmt::format("x{:.2f}", c / a) : std::string(); };
    s += fmt::format("duet bench: {} | prompt {} + {} generated | batch {} | NPU {} | PIM {} | memory {}\n", r.model,
                     r.seq_len, r.gen_len, r.batch, r.npu, r.pim, r.memory);
    if (!r.parallel.is_null())
        s += fmt::format("parallel: {} ({} micro-batches) | FlashComm {} | HCCL_OP_EXPANSION_MODE {} | "
                         "memory: one rank's share\n",
                         parallel_axes(r.parallel), r.parallel.value("micro_batches", 1), r.parallel.value("flashcomm", false) ? "on" : "off",
                         r.parallel.value("hccl_expansion", ""));
    s += format_expert_lines(r);
    if (!r.pim_precision.is_null()) {
        const std::string note = r.pim_precision.value("note", "");
        s += fmt::format("PIM precision: {}{}\n", r.pim_precision.value("precision", ""),
                         note.empty() ? std::string() : " (" + note + ")");
    }
    row("", b.policy + " (base)", t.policy + " (target)");
    row("TTFT", ms(b.timeline.ttft_ns), ms(t.timeline.ttft_ns),
        fmt::format("{:+.3f} ms", (t.timeline.ttft_ns - b.timeline.ttft_ns) / 1e6));
    row("  prefill forward", ms(b.timeline.prefill_ns), ms(t.timeline.prefill_ns));
    auto us = [](double ns) { return fmt::format("{:.1f} us", ns / 1e3); };
    row("  conversion exposed", us(b.timeline.conversion_exposed_ns), us(t.timeline.conversion_exposed_ns));
    row("  prefill->decode switch", us(b.timeline.switch_ns), us(t.timeline.switch_ns));
    row("TBT mean", ms(b.tbt_mean_ns), ms(t.tbt_mean_ns), ratio(b.tbt_mean_ns, t.tbt_mean_ns));
    row("TBT p50", ms(b.tbt_p50_ns), ms(t.tbt_p50_ns), ratio(b.tbt_p50_ns, t.tbt_p50_ns));
    row("TBT p99", ms(b.tbt_p99_ns), ms(t.tbt_p99_ns), ratio(b.tbt_p99_ns, t.tbt_p99_ns));
    row("Peak memory", mib(b.memory.total_bytes()), mib(t.memory.total_bytes()),
        fmt::format("{:+.2f} %", 100 * (double(t.memory.total_bytes()) / double(b.memory.total_bytes()) - 1)));
    row("  weights", mib(b.memory.weights_bytes), mib(t.memory.weights_bytes));
    row("    of which in the PIM layout", mib(b.memory.weights_pim_base_bytes), mib(t.memory.weights_pim_base_bytes));
    if (b.memory.weights_experts_bytes > 0 || t.memory.weights_experts_bytes > 0) {
        row("    of which routed experts", mib(b.memory.weights_experts_bytes), mib(t.memory.weights_experts_bytes));
        row("    of which shared", mib(b.memory.weights_bytes - b.memory.weights_experts_bytes),
            mib(t.memory.weights_bytes - t.memory.weights_experts_bytes));
    }
    row("  block index", mib(b.memory.block_index_bytes), mib(t.memory.block_index_bytes));
    row(b.memory.kv_cache_latent ? "  KV cache (paged, MLA latent)" : "  KV cache (paged)", mib(b.memory.kv_cache_bytes),
        mib(t.memory.kv_cache_bytes));
    row("  activations (static plan)", mib(b.memory.activations_bytes), mib(t.memory.activations_bytes));
    row("  conversion cache", mib(b.memory.conversion_bytes), mib(t.memory.conversion_bytes));
    row("  workspace", mib(b.memory.workspace_bytes), mib(t.memory.workspace_bytes));
    row("Decode external bandwidth", fmt::format("{:.0f} GB/s", b.decode_ext_bw_gbps),
        fmt::format("{:.0f} GB/s", t.decode_ext_bw_gbps));
    row("  of peak", fmt::format("{:.1f} %", 100 * b.decode_ext_bw_util), fmt::format("{:.1f} %", 100 * t.decode_ext_bw_util));
    auto names = [](const std::vector<std::string>& v) {
        std::string out;
        for (const std::string& n : v) out += (out.empty() ? "" : ",") + n;
        return out;
    };
    row("Devices used", names(devices_used(b)), names(devices_used(t)));
    row("PIM busy in decode", fmt::format("{:.1f} %", 100 * b.pim_util), fmt::format("{:.1f} %", 100 * t.pim_util));
    row("PIM internal bandwidth used", fmt::format("{:.1f} %", 100 * b.pim_internal_bw_util),
        fmt::format("{:.1f} %", 100 * t.pim_internal_bw_util));
    row("  PIM GEMV rate while busy", fmt::format("{:.0f} GB/s", b.pim_gemv_gbps), fmt::format("{:.0f} GB/s", t.pim_gemv_gbps));
    // per device and per link of the topology (same machine in both runs)
    const auto per_step = [](const RunReport& run, double ns) {
        const double steps = double(run.timeline.tbt_ns.size());
        return steps > 0 ? fmt::format("{:.3f} ms", ns / steps / 1e6) : std::string("-");
    };
    row("Decode busy per token", "", "");
    for (size_t d = 0; d < t.timeline.decode.device.size(); ++d) {
        const auto& bd = b.timeline.decode.device, &td = t.timeline.decode.device;
        row("  " + td[d].name, d < bd.size() ? per_step(b, bd[d].busy_ns) : "-", per_step(t, td[d].busy_ns));
    }
    bool comm = false;
    for (const RunReport* run : {&b, &t})
        for (const DeviceStats& d : run->timeline.decode.device) comm = comm || d.comm_ns > 0;
    if (comm) {  // tensor/pipeline parallel: each device's collectives and the part nothing hid
        row("Decode communication per token", "collective/exposed", "collective/exposed");
        const auto both = [&](const RunReport& run, size_t d) {
            const auto& dev = run.timeline.decode.device;
            if (d >= dev.size() || run.timeline.tbt_ns.empty()) return std::string("-");
            const double steps = double(run.timeline.tbt_ns.size());
            return fmt::format("{:.3f}/{:.3f} ms", dev[d].comm_ns / steps / 1e6, dev[d].exposed_comm_ns / steps / 1e6);
        };
        for (size_t d = 0; d < t.timeline.decode.device.size(); ++d) row("  " + t.timeline.decode.device[d].name, both(b, d), both(t, d));
    }
    for (size_t l = 0; l < t.timeline.links.size(); ++l) {
        const auto& bl = b.timeline.links, &tlk = t.timeline.links;
        if (tlk[l].transfers == 0 && (l >= bl.size() || bl[l].transfers == 0)) continue;
        row("  link " + tlk[l].name, l < bl.size() ? per_step(b, bl[l].busy_ns) : "-", per_step(t, tlk[l].busy_ns));
    }
    row("Energy per decode token", fmt::format("{:.3f} mJ", b.decode_energy_per_token_pj / 1e9),
        fmt::format("{:.3f} mJ", t.decode_energy_per_token_pj / 1e9),
        ratio(b.decode_energy_per_token_pj, t.decode_energy_per_token_pj));
    const auto part = [](const RunReport& run, DeviceKind kind) {
        return fmt::format("{:.3f} mJ", decode_energy_per_token_pj(run, kind) / 1e9);
    };
    row("  NPU (TDP x busy, upper bound)", part(b, DeviceKind::NPU), part(t, DeviceKind::NPU));
    const std::string pim_basis = pim_energy_basis(t);
    row(pim_basis == "not_modelled" ? "  PIM (not modelled: no [energy])" : "  PIM (per DRAM command)",
        part(b, DeviceKind::PIM), part(t, DeviceKind::PIM));
    row("Energy of prefill", fmt::format("{:.3f} mJ", b.prefill_energy_pj / 1e9),
        fmt::format("{:.3f} mJ", t.prefill_energy_pj / 1e9));
    if (!r.functional.is_null()) {
        const auto& f = r.functional;
        row("Host prefill (CPU, real)", fmt::format("{:.2f} ms", f["baseline"]["prefill_ms"].get<double>()),
            fmt::format("{:.2f} ms", f["target"]["prefill_ms"].get<double>()));
        row("Host decode per token", fmt::format("{:.3f} ms", f["baseline"]["decode_ms_per_token"].get<double>()),
            fmt::format("{:.3f} ms", f["target"]["decode_ms_per_token"].get<double>()));
        s += fmt::format("Generated tokens (greedy, {} prompt ids): {}\n", f["n_prompt"].get<int64_t>(),
                         f["identical"].get<bool>() ? "identical in both runs" : "DIFFERENT between the runs");
        if (!f["identical"].get<bool>()) s += "  baseline " + f["tokens_baseline"].dump() + "\n  target   ";
        else s += "  ";
        s += f["tokens_target"].dump() + "\n";
        s += fmt::format("  max logit difference {:.3g} (both runs scored on the baseline's tokens)\n",
                         f["max_logit_diff"].get<double>());
        s += fmt::format("  target read {} matrices in place through the PIM layout and its block index ({} held as f16 "
                         "from f32: ascend.op_precision_mode = {})\n",
                         f["target"]["pim_layout_matrices"].get<int64_t>(),
                         f["target"]["f16_from_f32_matrices"].get<int64_t>(), f["op_precision_mode"].get<std::string>());
        if (f.contains("pim_int8") && f["pim_int8"].is_object()) {
            const auto& q = f["pim_int8"];
            s += fmt::format("  [pim] precision = int8: {} Q8_0 matrices held as int8 quants in the PIM layout, their f16 "
                             "block scales beside it ({:.2f} MiB); PIM: {}\n",
                             q["q8_0_matrices"].get<int64_t>(), double(q["scale_bytes"].get<uint64_t>()) / 1048576.0,
                             q["pim_macs"].get<std::string>());
            if (!q["widened_to_int8"].get<std::string>().empty())
                s += fmt::format("  {} matrices keep their ggml rows and run widened to int8 (no PIM preset has int4 "
                                 "MACs)\n",
                                 q["widened_to_int8"].get<std::string>());
        }
    }
    s += "Verdicts:\n";
    for (const Verdict& v : r.verdicts) s += "  " + v.line + "\n";
    for (const RunReport* run : {&b, &t})
        for (const std::string& w : run->warnings) s += "  warning: " + w + "\n";
    return s;
}

}  // namespace duet::sim
