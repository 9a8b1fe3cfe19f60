#include "workload/file_bench.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "hw/pim/pim_device.h"
#include "workload/file_engine_run.h"

namespace duet::workload {

namespace {

// The report's account of [pim] precision = int8 in FILE mode: the Q8_0 matrices held as int8
// with their scales, the other quantised dtypes widened to int8 (no preset has int4 MACs), and
// how the PIM model runs int8 (its MACs, or widened to its 16-bit float MACs where it has none).
nlohmann::json int8_statement(const FileRun& run, const sim::OpTrace& trace, const hw::Device* pim) {
    std::string widened;  // quantised dtypes other than q8_0 in the matmuls
    for (const auto& rec : trace)
        if (rec.kind == sim::OpKind::MATMUL && dtype_is_quantized(rec.weight_dtype) && rec.weight_dtype != DType::Q8_0 &&
            widened.find(dtype_name(rec.weight_dtype)) == std::string::npos)
            widened += std::string(widened.empty() ? "" : ", ") + dtype_name(rec.weight_dtype);
    const auto* dev = dynamic_cast<const hw::pim::PimDevice*>(pim);
    return {{"q8_0_matrices", run.int8_matrices},
            {"scale_bytes", run.int8_scale_bytes},
            {"widened_to_int8", widened},
            {"pim_macs", dev ? dev->quantised_operands() : std::string("no PIM device")}};
}

// The modelled devices hold what the layout holds: f32 matrices as f16 when the precision mode
// converts them, in both placements (the NPU's matrix operators run them in f16 too).
void hold_f32_as_f16(sim::OpTrace& trace) {
    for (auto& rec : trace)
        if (rec.kind == sim::OpKind::MATMUL && rec.weight_dtype == DType::F32) {
            rec.weight_dtype = DType::F16;
            rec.weight_bytes /= 2;
        }
}

// What the host measured of one run (report functional.baseline / functional.target).
nlohmann::json host_json(const FileRun& f) {
    return nlohmann::json{{"prefill_ms", f.stats.prefill_ms},
                          {"ttft_ms", f.stats.ttft_ms},
                          {"decode_ms", f.stats.decode_ms},
                          {"decode_ms_per_token", f.stats.n_decode > 0 ? f.stats.decode_ms / double(f.stats.n_decode) : 0.0},
                          {"pim_layout_matrices", f.pim_matrices},
                          {"f16_from_f32_matrices", f.converted_matrices},
                          {"warmup", {{"method", f.warmup.method}, {"prefault_bytes", f.warmup.prefault_bytes},
                                      {"prefault_ms", f.warmup.prefault_ms}, {"n_forwards", f.warmup.n_forwards}}}};
}

// Teacher-forced: both runs scored on the baseline's tokens.
double max_logit_diff(const FileRun& fb, const FileRun& ft) {
    double max_diff = 0;
    for (size_t i = 0; i < std::min(fb.logits.size(), ft.logits.size()); ++i)
        max_diff = std::max(max_diff, double(std::fabs(fb.logits[i] - ft.logits[i])));
    return max_diff;
}

}  // namespace

FileBenchPlans run_file_bench(const config::Settings& st, const config::CoopConfig& cfg, const TraceBenchInputs& in,
                              BenchSetup& setup, const runtime::WarmupOptions& warmup, bool seq_len_from_flag) {
    if (in.batch != 1) fail("--batch = {} with a model file: FILE mode runs one sequence (allowed: 1)", in.batch);
    const auto& lp = setup.rig->layout->params();
    const auto& org = setup.rig->layout->organisation();
    const bool pim_b = setup.pb != sim::Policy::NPU_ONLY, pim_t = setup.pt != sim::Policy::NPU_ONLY;
    const bool f32_to_f16 = op_precision_converts_f32(st.ascend.op_precision_mode);
    const bool int8 = cfg.pim.precision == config::PimPrecision::INT8;
    FileRun fb = run_file_engine(in.model, in.seq_len, in.gen_len, pim_b, lp, org, in.fuse, warmup, f32_to_f16,
                                 nullptr, int8, seq_len_from_flag);
    FileRun ft = run_file_engine(in.model, in.seq_len, in.gen_len, pim_t, lp, org, in.fuse, warmup, f32_to_f16,
                                 &fb.tokens, int8);
    if (f32_to_f16)
        for (sim::OpTrace* tr : {&fb.trace, &ft.trace}) hold_f32_as_f16(*tr);
    FileBenchPlans p;
    p.plan_b.ops = std::move(fb.trace);
    p.plan_b.forwards = sim::split_forwards(p.plan_b.ops);
    p.plan_t.ops = std::move(ft.trace);
    p.plan_t.forwards = sim::split_forwards(p.plan_t.ops);
    p.n_prompt = int64_t(fb.prompt.size());
    for (const auto& rec : p.plan_b.ops)  // memory accounting in the weight dtype the devices hold
        if (rec.kind == sim::OpKind::MATMUL) setup.shape_b.weight_dtype = setup.shape_t.weight_dtype = rec.weight_dtype;
    nlohmann::json pim_int8;  // [pim] precision = int8: what the layout and the PIM model did
    if (int8) pim_int8 = int8_statement(ft.int8_matrices ? ft : fb, p.plan_t.ops, setup.rig->pim.get());
    p.functional = {{"file", in.model},
                    {"pim_precision", config::pim_precision_name(cfg.pim.precision)},
                    {"pim_int8", pim_int8},
                    {"n_prompt", p.n_prompt},
                    {"identical", fb.tokens == ft.tokens},
                    {"precision_changed", fb.converted_matrices + ft.converted_matrices > 0},
                    {"op_precision_mode", st.ascend.op_precision_mode},
                    {"max_logit_diff", max_logit_diff(fb, ft)},
                    {"tokens_baseline", fb.tokens},
                    {"tokens_target", ft.tokens},
                    {"baseline", host_json(fb)},
                    {"target", host_json(ft)}};
    return p;
}

void check_file_tokens(const nlohmann::json& functional, const TraceBenchInputs& in) {
    // Same numerics must give the same tokens; a layout that changed precision reports the difference instead.
    if (!functional["identical"].get<bool>() && !functional["precision_changed"].get<bool>())
        fail("{}: the generated tokens differ between {} and {} (max logit difference {:.3g}): the PIM layout path "
             "computed different numbers",
             in.model, in.baseline, in.target, functional["max_logit_diff"].get<double>());
}

}  // namespace duet::workload
