#include "serving/step_trace.h"

#include <fmt/format.h>

namespace duet::serving {

nlohmann::json steps_trace_json(const std::vector<std::string>& names,
                                const std::vector<std::vector<StepEvent>>& runs) {
    nlohmann::json ev = nlohmann::json::array();
    for (size_t r = 0; r < runs.size(); ++r) {
        const int pid = int(r) + 1;
        ev.push_back({{"ph", "M"}, {"pid", pid}, {"name", "process_name"}, {"args", {{"name", names[r]}}}});
        ev.push_back({{"ph", "M"}, {"pid", pid}, {"tid", 1}, {"name", "thread_name"}, {"args", {{"name", "steps"}}}});
        for (const StepEvent& e : runs[r]) {
            const double ts = double(e.t_ns) / 1e3;
            ev.push_back({{"ph", "X"},
                          {"pid", pid},
                          {"tid", 1},
                          {"name", fmt::format("P{} D{}", e.prefill_tokens, e.decode_seqs)},
                          {"cat", e.prefill_tokens > 0 ? "prefill" : "decode"},
                          {"ts", ts},
                          {"dur", double(e.dur_ns) / 1e3},
                          {"args",
                           {{"prompt_tokens", e.prefill_tokens},
                            {"decode_seqs", e.decode_seqs},
                            {"admitted", e.admitted},
                            {"preempted", e.preempted}}}});
            ev.push_back({{"ph", "C"}, {"pid", pid}, {"name", "sequences"}, {"ts", ts},
                          {"args", {{"running", e.running}, {"waiting", e.waiting}}}});
            ev.push_back({{"ph", "C"}, {"pid", pid}, {"name", "KV blocks used"}, {"ts", ts},
                          {"args", {{"blocks", e.kv_blocks_used}}}});
        }
    }
    return {{"traceEvents", ev}, {"displayTimeUnit", "ns"}};
}

}  // namespace duet::serving
