// Speed of the trace-only simulator (issue 4 item 10): plan + baseline + target runs of a
// llama2-7b-shaped model, 2048 prompt + 256 generated tokens, on closed-form stand-in devices
// (the real device models are memoised per shape, so their cost is a small constant on top;
// `duet bench` logs its own wall time at log_level = info).
#include <benchmark/benchmark.h>

#include <algorithm>

#include "core/build_paths.h"
#include "core/log.h"
#include "sim/report.h"
#ifdef DUET_BENCH_REAL_DEVICES
#include "sim/hw_rig.h"
#endif

namespace {

using namespace duet;

struct Roofline : hw::Device {
    double flops_per_ns, bytes_per_ns;
    bool gemv_only;
    Roofline(double f, double b, bool g) : flops_per_ns(f), bytes_per_ns(b), gemv_only(g) {}
    std::string name() const override { return "roofline"; }
    bool supports(const hw::OpShape& s) const override { return !gemv_only || s.m == 1; }
    hw::Cost estimate(const hw::OpShape& s) const override {
        hw::Cost c;
        c.bytes_moved = double(s.weight_bytes + s.in_bytes + s.out_bytes);
        c.t_ns = std::max(s.flops / flops_per_ns, c.bytes_moved / bytes_per_ns) + 2000;
        return c;
    }
};

struct Layout : sim::LayoutModel {
    uint64_t nz_bytes(int64_t n, int64_t k, DType) const override { return uint64_t(n * k * 2); }
    sim::PimMatrixInfo pim(int64_t n, int64_t k, DType) const override {
        sim::PimMatrixInfo p;
        p.base_bytes = uint64_t(n * k * 2);
        p.n_blocks = int64_t(p.base_bytes / 16384 + 1);
        p.index_bytes = uint64_t(p.n_blocks) * 24;
        p.to_nz_ns = double(p.base_bytes) / 1200;
        p.to_nz_bytes_read = p.base_bytes;
        return p;
    }
    double nz_to_pim_ns(int64_t n, int64_t k, DType) const override { return double(n * k * 4) / 800; }
};

void BM_TraceOnlyLlama2_7b_2048_256(benchmark::State& state) {
    graph::ModelShape s{"llama2-7b", 32000, 4096, 32, 32, 32, 11008, 128, false, false, DType::F16, DType::F16};
    Roofline npu(350e3, 1600, false), pim(1e6, 6400, true);
    Layout lay;
    sim::SimHardware hw = sim::npu_pim_hardware(&npu, &pim, &lay);
    hw.mem_bw_gbps = 1600;
    hw.pim_internal_bw_gbps = 6400;
    spdlog::set_level(spdlog::level::warn);
    sim::RunOptions b, t;
    b.placement.policy = sim::Policy::NPU_ONLY;
    for (auto _ : state) {
        sim::Plan plan = sim::plan_generation(s, 2048, 256, 1);
        auto rb = sim::simulate_run(s, plan, 2304, 1, b, hw);
        auto rt = sim::simulate_run(s, plan, 2304, 1, t, hw);
        benchmark::DoNotOptimize(rb.tbt_mean_ns + rt.tbt_mean_ns);
    }
}
BENCHMARK(BM_TraceOnlyLlama2_7b_2048_256)->Unit(benchmark::kMillisecond);

#ifdef DUET_BENCH_REAL_DEVICES
// What `duet bench` does by default: the real NPU/PIM/layout models from configs/.
void BM_DuetBenchRealDevices_2048_256(benchmark::State& state) {
    spdlog::set_level(spdlog::level::warn);
    config::Settings st = config::load_settings(std::string(duet::core::default_config_dir()) + "/settings.json", {}, {});
    config::CoopConfig cfg = config::load_coop_config(std::string(duet::core::default_config_dir()) + "/config.toml", {});
    graph::ModelShape s{"llama2-7b", 32000, 4096, 32, 32, 32, 11008, 128, false, false, DType::F16, DType::F16};
    for (auto _ : state) {
        auto rig = sim::make_hardware_rig(st, cfg, "");
        sim::Plan plan = sim::plan_generation(s, 2048, 256, 1);
        auto rb = sim::simulate_run(s, plan, 2304, 1, sim::run_options_from(cfg, sim::Policy::NPU_ONLY), rig->hw);
        auto rt = sim::simulate_run(s, plan, 2304, 1, sim::run_options_from(cfg, sim::Policy::NPU_PIM_COOP), rig->hw);
        benchmark::DoNotOptimize(rb.tbt_mean_ns + rt.tbt_mean_ns);
    }
}
BENCHMARK(BM_DuetBenchRealDevices_2048_256)->Unit(benchmark::kMillisecond);
#endif

}  // namespace

BENCHMARK_MAIN();
