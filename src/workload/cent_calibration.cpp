#include "workload/cent_calibration.h"

#include <optional>

#include <fmt/format.h>

#include "core/error.h"
#include "hw/calibration/reference_runs.h"
#include "workload/trace_bench.h"

namespace duet::workload {

namespace {

using hw::calibration::Check;
using hw::calibration::Point;

constexpr const char* kPublished = "Morteza1814/CENT @a5d6e53 cent_simulation/simulation_results.csv";

// Context positions of CENT's decode figure: run_sim.py --process_throughputs --phase decoding
// averages the rows with prefill (512) < L <= prefill + decode (4096), L in steps of 128.
std::vector<int64_t> decode_positions() {
    std::vector<int64_t> out;
    for (int64_t l = 640; l <= 4096; l += 128) out.push_back(l);
    return out;
}

struct System {
    const char* preset;  // duet architecture preset
    const char* model;   // CENT's name
    int devices;
    const char* link;
    double published_ms;  // mean 'Token latency (ms)' of the rows above (PP 1, TP = devices)
};

// The harness's re-run: the mean token_ms of its rows at the decode positions it ran.
std::optional<std::pair<double, int>> rerun_mean(const std::optional<hw::calibration::ReferenceFile>& ref,
                                                 const System& s) {
    if (!ref) return std::nullopt;
    double sum = 0;
    int n = 0;
    for (const auto& r : ref->runs) {
        if (r.strings.count("model") == 0 || r.strings.at("model") != s.model || r.number("devices") != s.devices)
            continue;
        const double l = r.number("seqlen");
        if (l <= 512 || l > 4096) continue;
        sum += r.number("token_ms");
        ++n;
    }
    if (n == 0) return std::nullopt;
    return std::pair{sum / n, n};
}

}  // namespace

double cent_system_token_ms(const std::string& model, int devices, const std::string& link,
                            const std::vector<int64_t>& positions) {
    if (positions.empty()) fail("cent_system_token_ms: no context positions");
    config::Settings st;
    st.runtime.dtype = "bf16";  // CENT's AiM computes in bf16
    config::CoopConfig cfg;
    cfg.topology.pims = devices;
    cfg.topology.pim_link = link;
    cfg.topology.tp_split = config::TpSplitMode::CENT;  // CENT's model-parallel partition (docs/scale-out.md)
    TraceBenchInputs in;
    in.model = model;
    in.pim = "pim_cxl_aim";
    in.tp = devices;
    in.baseline = in.target = "pim_only";
    in.gen_len = 2;  // the prompt's token, then one decode step
    double sum = 0;
    for (const int64_t pos : positions) {
        in.seq_len = pos - 1;  // the decode step writes position `pos` and attends over `pos` entries
        st.runtime.seq_len = std::max<int64_t>(st.runtime.seq_len, pos);
        const sim::BenchReport r = run_trace_bench(st, cfg, in);
        sum += r.target.tbt_mean_ns / 1e6;
    }
    return sum / double(positions.size());
}

std::vector<Point> cent_system_points() {
    const System systems[] = {
        {"llama2-7b", "Llama2-7B", 8, "cxl_cent_x18", 1.7472228736281623},
        {"llama2-13b", "Llama2-13B", 20, "cxl_cent_x7", 2.8468020154506135},
        {"llama2-70b", "Llama2-70B", 32, "cxl_cent_x4", 10.331903214843752},
    };
    const auto ref = hw::calibration::load_reference_file("cent");
    std::vector<Point> out;
    for (const System& s : systems) {
        Point p;
        p.name = fmt::format("CENT {} on {} CXL AiM devices (TP {}), decode per-token latency, prompt 512 + 3584",
                             s.model, s.devices, s.devices);
        p.source = fmt::format("{} (rows {},{},1,{}, L = 640..4096 step 128: mean token latency {:.4f} ms)", kPublished,
                               s.model, s.devices, s.devices, s.published_ms);
        if (const auto rr = rerun_mean(ref, s))
            p.source += fmt::format("; re-run {}: {:.4f} ms over {} positions", ref->cite(), rr->first, rr->second);
        p.check = Check::RELATIVE;
        p.reference = s.published_ms;
        p.duet = cent_system_token_ms(s.preset, s.devices, s.link, decode_positions());
        p.tolerance = 0.25;
        p.unit = std::string("ms");
        p.note = "finding: duet bench pim_only, --pims/--tp = devices, [topology] tp_split = \"cent\" (CENT's "
                 "model-parallel partition: every block matrix split by output rows and all-gathered, every head's "
                 "attention with q.K^T positions over the devices, rotary, norms and the SiLU gate over the whole width "
                 "on each device), pim_cxl_aim over the CXL link preset; the CXL controller's RMSNorm, rotary and "
                 "softmax cycles ([controller]), host sampling once per token (sampling_ns, utils.py InOut_latency) "
                 "and the all-gathers as CENT's gather + multicast broadcast in flits (cxl_latency.py) are modelled. "
                 "duet sits above CENT by the per-operator input and output transfers between each device and the "
                 "host over its CXL link, which CENT's block does not make (docs/hardware-model.md 6)";
        p.device = "CENT-class system (pim_cxl_aim x devices, whole model, duet bench)";
        out.push_back(p);
    }
    return out;
}

}  // namespace duet::workload
