#include "workload/npu_calibration.h"

#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "hw/npu/npu_device.h"
#include "workload/serving_means.h"
#include "workload/trace_bench.h"

namespace duet::workload {

namespace {

using hw::calibration::Check;
using hw::calibration::Point;

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

// One public measurement set-up and duet's run of it: duet bench's NPU-only baseline for the
// same model shape, SoC, dtype, prompt, output length, batch and dispatch.
struct Setup {
    const char* soc;           // duet's preset for the reference's chip
    const char* model;         // duet's architecture preset
    const char* model_label;   // the model the reference ran
    int64_t prompt_tokens, new_tokens;
    bool serving_stack;        // the reference's figure includes the serving stack's per-step host work
    double rate_rps;           // > 0: a serving benchmark at this request rate (serving_means); 0: one batch
    int64_t n_requests;        // with rate_rps
    double tolerance;
    const char* source;
    const char* note;          // what differs between the two set-ups
};

// TorchAir's tuned-model README (Ascend/torchair npu_tuned_model/llm/qwen/README.md, "性能数据 /
// Qwen2-7B"): transformers 4.37 + torch_npu on one 800I A2 card (910B4) with an ARM host, bf16,
// the prompt padded to 1024 tokens, 1024 new tokens; "全量" is the first model step (prefill),
// "增量" the mean of the later steps, each timed between torch.npu.synchronize() calls around the
// model's forward alone (no scheduler, sampler or detokeniser: serving_stack false). "单算子模式" is
// torch_npu's single-operator mode with TASK_QUEUE_ENABLE=1 (queue1), "图模式" TorchAir (graph).
// The qwen2.5-7b preset has Qwen2-7B's config.json shape.
const Setup kTorchAir = {
    "Ascend910B4", "qwen2.5-7b", "Qwen2-7B", 1024, 1024, false, 0, 0, 0.30,
    "Ascend/torchair npu_tuned_model/llm/qwen/README.md @023f5b2, 性能数据 / Qwen2-7B",
    "Qwen2-7B bf16, prompt padded to 1024, 1024 new tokens, 800I A2 (910B4), transformers + torch_npu; the "
    "reference times the model step alone; duet: qwen2.5-7b shape on ascend910b4, NPU-only baseline of duet "
    "bench without the serving step cost"};

// vllm-ascend's serving benchmark (docs/source/developer_guide/performance/optimization_and_tuning.md:
// benchmark_serving.py, Qwen/Qwen2.5-7B-Instruct, --dataset-name random --random-input-len 200,
// 128 new tokens, 200 prompts at --request-rate 1, one NPU), as the project's own release
// checks report it. The chip: the same author's benchmark issue #1167 names "Atlas A2 313T 64GB"
// (a 64 GiB, 20-core 910B: duet's ascend910b3). TTFT and TPOT are the benchmark's means.
const Setup kVllmAscend = {
    "Ascend910B3", "qwen2.5-7b", "Qwen2.5-7B-Instruct", 200, 128, true, 1.0, 200, 0.20,
    "vllm-project/vllm-ascend",
    "Qwen2.5-7B-Instruct bf16 (vLLM dtype auto), 200-token random prompts, 128 new tokens, 200 requests at 1 "
    "req/s, one Atlas A2 910B (assumed 910B3 from issue #1167); the reference's TTFT also holds HTTP, "
    "tokenisation and detokenisation, which duet does not model; duet: qwen2.5-7b on ascend910b3, duet bench "
    "--workload serving --rate 1 --requests 200 (Poisson arrivals, seed 0) of the NPU-only baseline with the "
    "serving step cost, means over the requests"};

struct StepTimes {
    double prefill_ms = 0, decode_ms = 0;
};

StepTimes simulate(const Setup& s, const std::string& dispatch, int32_t batch) {
    config::Settings st;
    st.ascend.soc_version = s.soc;
    st.runtime.dtype = "bf16";
    config::CoopConfig cfg;
    TraceBenchInputs in;
    in.model = s.model;
    in.seq_len = s.prompt_tokens;
    in.gen_len = s.new_tokens;
    in.batch = batch;
    in.baseline = in.target = "npu_only";
    in.dispatch = dispatch;
    in.serving_step_cost = s.serving_stack;
    if (s.rate_rps > 0) {
        const ServingMeans m = serving_means(st, cfg, in, s.rate_rps, s.n_requests);
        return {m.ttft_ms, m.tpot_ms};
    }
    const sim::BenchReport r = run_trace_bench(st, cfg, in);
    return {r.baseline.timeline.ttft_ns / 1e6, r.baseline.tbt_mean_ns / 1e6};
}

const char* mode_label(const std::string& dispatch) { return dispatch == "graph" ? "graph" : "eager"; }

// One measured row of a set-up: duet's mode for the reference's execution mode, the batch, the
// two means (NaN: not published) and where they are read.
struct Ref {
    const char* dispatch;
    int32_t batch;
    double prefill_ms, decode_ms;
    const char* where;
};

std::string point_name(const Setup& s, const Ref& r, bool prefill) {
    const std::string chip = std::string(s.soc).substr(6);  // "910B4"
    if (s.rate_rps > 0)
        return fmt::format("Ascend {} {} {} ({}-token prompts, {:g} req/s serving), {}", chip, s.model_label,
                           prefill ? "mean TTFT" : "mean TPOT", s.prompt_tokens, s.rate_rps, mode_label(r.dispatch));
    return fmt::format("Ascend {} {} {}, batch {}, {}", chip, s.model_label,
                       prefill ? fmt::format("TTFT (prefill of {} tokens)", s.prompt_tokens)
                               : std::string("TPOT (mean decode step)"),
                       r.batch, mode_label(r.dispatch));
}

Point make_point(const Setup& s, const Ref& r, const StepTimes& d, bool prefill) {
    Point p;
    p.name = point_name(s, r, prefill);
    p.unit = "ms";
    p.tolerance = s.tolerance;
    p.duet = prefill ? d.prefill_ms : d.decode_ms;
    const double ref = prefill ? r.prefill_ms : r.decode_ms;
    p.source = fmt::format("{}: {}", s.source, r.where);
    p.note = fmt::format("{}; dispatch {}", s.note, r.dispatch);
    p.check = std::isnan(ref) ? Check::MISSING : Check::RELATIVE;
    p.reference = ref;
    return p;
}

void add_points(const Setup& s, const Ref& r, std::vector<Point>& out) {
    const StepTimes d = simulate(s, r.dispatch, r.batch);
    for (bool prefill : {true, false}) out.push_back(make_point(s, r, d, prefill));
}

// One decode operator as a profile measured it: vllm-ascend issue #4167 (v0.11.0, QwQ-32B bf16,
// tensor parallel 4, decode batch 1, cudagraph_mode FULL_DECODE_ONLY; msprof kernel times "up/gate
// proj 要110us左右, down proj 要 60us"). QwQ-32B has Qwen2.5-32B's shape (hidden 5120, FFN 27648),
// so one rank's fused gate/up GEMV is [2 x 27648 / 4][5120] and its down GEMV [5120][27648 / 4].
// The A2 chip is not stated: duet runs the 910B2 (settings' Ascend910B); on the 910B3 the two
// GEMVs take 126 and 64 us, within the same tolerance.
Point kernel_point(const char* what, int64_t n, int64_t k, double ref_us) {
    hw::npu::NpuOptions o;
    o.dispatch = hw::npu::DispatchMode::GRAPH;
    const hw::npu::NpuDevice npu(hw::npu::load_npu_preset("Ascend910B2"), o);
    hw::OpShape op;
    op.cls = hw::OpClass::GEMV;
    op.m = 1, op.n = n, op.k = k;
    op.weight_dtype = op.act_dtype = DType::BF16;
    Point p;
    p.name = fmt::format("Ascend 910B QwQ-32B TP4 decode {} GEMV {}x{} bf16, batch 1, graph", what, n, k);
    p.source = "vllm-project/vllm-ascend: issue #4167 (v0.11.0 msprof of QwQ-32B bf16, TP4, decode batch 1, "
               "FULL_DECODE_ONLY)";
    p.note = "one operator's kernel time on an A2 card whose chip the issue does not name; duet: ascend910b2, "
             "graph dispatch (3 us task start), peak memory efficiency";
    p.check = Check::RELATIVE;
    p.unit = "us";
    p.reference = ref_us;
    p.duet = npu.estimate(op).t_ns / 1e3;
    p.tolerance = 0.20;
    p.device = "Ascend NPU (one operator)";
    return p;
}

}  // namespace

std::vector<Point> npu_reference_points() {
    const Ref torchair[] = {
        {"graph", 1, 94, 23, "table '800I A2不同bs的图模型性能比较', batch size 1"},
        {"queue1", 1, kNone, kNone,
         "graph mode only at batch 1 (single-operator mode is measured at batch 4 only; also searched: MindIE "
         "docs (640 random prompts on 4 NPUs), PR #2041 (eager 669 ms vs torchair 584 ms TPOT, shape not stated))"},
        {"queue1", 4, 366, 25, "table '单卡性能数据' (4 batch), row 'qkv融合', 单算子模式"},
        {"graph", 4, 345, 24, "table '单卡性能数据' (4 batch), row 'qkv融合', 图模式"},
    };
    const Ref vllm_ascend[] = {
        {"queue1", 1, 86.58, 32.57,
         "issue #904 (0.9.0rc1 release checklist), row 'vLLM Ascend v0.7.3 (Baseline)': V0 engine, eager "
         "(graph mode not in v0.7.3), TASK_QUEUE_ENABLE default 1"},
        {"graph", 1, (79.8 + 76.28 + 77.89) / 3, (22.59 + 22.38 + 22.62) / 3,
         "issue #4110 (regression v0.11.0rc1 vs v0.9.1), rows 'vLLM Ascend v0.11.0rc1 Round1-3' (mean): V1 "
         "engine, ACL graph (the default; FULL_DECODE_ONLY not working for Qwen2.5 in 0.11.0rc1, issue #4178); "
         "the totals (39932 input, 25600 output tokens, 200 requests at 1 req/s) are the tuning doc's workload, "
         "the model name of its perf.sh is not in the public excerpt"},
    };
    std::vector<Point> out;
    for (const Ref& r : torchair) add_points(kTorchAir, r, out);
    for (const Ref& r : vllm_ascend) add_points(kVllmAscend, r, out);
    out.push_back(kernel_point("gate/up", 2 * 27648 / 4, 5120, 110));
    out.push_back(kernel_point("down", 5120, 27648 / 4, 60));
    return out;
}

}  // namespace duet::workload
