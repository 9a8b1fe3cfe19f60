// The printed lines on a Mixture-of-Experts run's experts (RunReport::experts, sim/expert_load.h).
#include <fmt/format.h>

#include "sim/report.h"

namespace duet::sim {
namespace {

double at(const nlohmann::json& a, size_t i) { return i < a.size() ? a[i].get<double>() : 0.0; }

// "1.00 rows, 1.00 experts on rank 0 (busiest), 0.98 on rank 1 ..." for up to 4 ranks.
std::string loads(const nlohmann::json& e) {
    const nlohmann::json& rows = e.at("decode_rows_per_layer");
    const size_t busiest = e.value("busiest_device", size_t(0));
    std::string s = fmt::format("busiest EP rank {}: {:.2f} routed rows, {:.2f} active experts per layer", busiest,
                                at(rows, busiest), at(e.at("decode_active_experts_per_layer"), busiest));
    if (rows.size() > 1) {
        double lo = at(rows, 0);
        for (size_t i = 1; i < rows.size(); ++i) lo = std::min(lo, at(rows, i));
        s += fmt::format(" (least loaded: {:.2f} rows)", lo);
    }
    return s;
}

std::string placement(const nlohmann::json& e) {
    const size_t b = e.value("busiest_device", size_t(0));
    const double pim = at(e.at("decode_experts_on_pim_per_layer"), b), npu = at(e.at("decode_experts_on_npu_per_layer"), b);
    std::string s = fmt::format("{:.2f} on PIM, {:.2f} on the NPU per layer", pim, npu);
    std::string th;
    for (const auto& [role, rows] : e.at("pim_row_threshold").items())
        th += fmt::format("{}{} {}", th.empty() ? "" : ", ", role,
                          rows.is_null() ? std::string("any up to 256") : fmt::format("< {}", rows.get<int64_t>()));
    if (!th.empty()) s += " | an expert goes to PIM with rows " + th;
    return s;
}

}  // namespace

std::string format_expert_lines(const BenchReport& r) {
    const nlohmann::json& b = r.baseline.experts;
    const nlohmann::json& t = r.target.experts;
    if (b.is_null() && t.is_null()) return "";
    const nlohmann::json& e = t.is_null() ? b : t;
    std::string s = fmt::format("experts: routing {} ({}) | ep {}, {} experts per device ({}) | {}\n",
                                e.value("routing", ""), e.value("model", ""), e.value("ep", 1),
                                e.value("experts_per_device", 0), e.value("placement", ""), loads(e));
    if (!t.is_null()) s += fmt::format("experts in decode ({}): {}\n", r.target.policy, placement(t));
    return s;
}

}  // namespace duet::sim
