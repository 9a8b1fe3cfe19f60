#include "workload/npu_calibration.h"

#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "workload/bench_runner.h"

namespace duet::workload {

namespace {

using hw::calibration::Check;
using hw::calibration::Point;

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

// The measurement (Ascend/torchair npu_tuned_model/llm/qwen/README.md, "性能数据 / Qwen2-7B"):
// transformers 4.37 + torch_npu on one 800I A2 card with an ARM host, bf16 weights, the prompt
// padded to 1024 tokens, 1024 new tokens; "全量" is the first model step (prefill), "增量" the
// mean of the later steps (decode), each timed between torch.npu.synchronize() calls.
// "单算子模式" is torch_npu's single-operator mode with its default TASK_QUEUE_ENABLE=1 (duet's
// queue1), "图模式" is TorchAir's graph mode (duet's graph).
constexpr const char* kSource = "Ascend/torchair npu_tuned_model/llm/qwen/README.md @023f5b2, 性能数据 / Qwen2-7B";
constexpr int64_t kPromptTokens = 1024;
constexpr int64_t kNewTokens = 1024;

struct StepTimes {
    double prefill_ms = 0, decode_ms = 0;
};

// duet bench's NPU-only run: Qwen2-7B's shape (the qwen2.5-7b preset: hidden 3584, 28 layers,
// 28 query / 4 KV heads, FFN 18944, vocabulary 152064, untied head: the same config.json values
// as Qwen2-7B) in bf16 on the 910B4 preset (the 800I A2's chip: the sibling llama README of the
// same benchmark names its device memory "B4, about 29 GB").
StepTimes simulate(const std::string& dispatch, int32_t batch) {
    config::Settings st;
    st.ascend.soc_version = "Ascend910B4";
    st.runtime.dtype = "bf16";
    config::CoopConfig cfg;
    TraceBenchInputs in;
    in.model = "qwen2.5-7b";
    in.seq_len = kPromptTokens;
    in.gen_len = kNewTokens;
    in.batch = batch;
    in.baseline = in.target = "npu_only";
    in.dispatch = dispatch;
    const sim::BenchReport r = run_trace_bench(st, cfg, in);
    return {r.baseline.timeline.ttft_ns / 1e6, r.baseline.tbt_mean_ns / 1e6};
}

const char* mode_label(const std::string& dispatch) { return dispatch == "graph" ? "graph" : "eager"; }

}  // namespace

std::vector<Point> npu_reference_points() {
    struct Ref {
        const char* dispatch;  // duet's mode for the reference's execution mode
        int32_t batch;
        double prefill_ms, decode_ms;  // NaN: not published
        const char* where;             // table and row of the README
    };
    const Ref refs[] = {
        {"graph", 1, 94, 23, "table '800I A2不同bs的图模型性能比较', batch size 1"},
        {"queue1", 1, kNone, kNone, ""},
        {"queue1", 4, 366, 25, "table '单卡性能数据' (4 batch), row 'qkv融合', 单算子模式"},
        {"graph", 4, 345, 24, "table '单卡性能数据' (4 batch), row 'qkv融合', 图模式"},
    };
    std::vector<Point> out;
    for (const Ref& r : refs) {
        const StepTimes d = simulate(r.dispatch, r.batch);
        for (bool prefill : {true, false}) {
            Point p;
            p.name = fmt::format("Ascend 910B4 Qwen2-7B {}, batch {}, {}",
                                 prefill ? "TTFT (prefill of 1024 tokens)" : "TPOT (mean decode step)", r.batch,
                                 mode_label(r.dispatch));
            p.unit = std::string("ms");
            p.tolerance = 0.30;
            p.duet = prefill ? d.prefill_ms : d.decode_ms;
            const double ref = prefill ? r.prefill_ms : r.decode_ms;
            if (std::isnan(ref)) {
                p.check = Check::MISSING;
                p.reference = kNone;
                p.source = fmt::format("{} (graph mode only at batch 1)", kSource);
                p.note = "the README measures single-operator mode at batch 4 only; also searched: vllm-ascend "
                         "issue #776 (ShareGPT serving at request rates, latency test at batch 8) and PR #2041 "
                         "(eager 669 ms vs torchair 584 ms TPOT, model size and shape not stated), MindIE docs "
                         "(640 random prompts on 4 NPUs)";
            } else {
                p.check = Check::RELATIVE;
                p.reference = ref;
                p.source = fmt::format("{}: {}", kSource, r.where);
                p.note = fmt::format(
                    "Qwen2-7B bf16, prompt padded to 1024, 1024 new tokens, 800I A2 (910B4), transformers + "
                    "torch_npu; the reference times the model step alone; duet: qwen2.5-7b shape on ascend910b4, "
                    "dispatch {}, NPU-only baseline of duet bench", r.dispatch);
            }
            out.push_back(p);
        }
    }
    return out;
}

}  // namespace duet::workload
