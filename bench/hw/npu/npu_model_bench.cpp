// Speed of the analytical NPU and layout models (issue 3 item 6): operators estimated per second.
// Reported as items_per_second by Google Benchmark.
#include <benchmark/benchmark.h>

#include "hw/npu/npu_device.h"
#include "layout/conversion_cost.h"
#include "layout/pim_layout.h"

using namespace duet;

namespace {

const hw::npu::NpuDevice& device() {
    static const hw::npu::NpuDevice d(hw::npu::load_npu_preset("Ascend910B2"));
    return d;
}

void BM_NpuGemmEstimate(benchmark::State& state) {
    hw::OpShape op;
    op.cls = hw::OpClass::GEMM;
    op.m = state.range(0), op.n = 4096, op.k = 4096;
    for (auto _ : state) benchmark::DoNotOptimize(device().estimate(op));
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NpuGemmEstimate)->Arg(1)->Arg(2048);

void BM_NpuAttentionEstimate(benchmark::State& state) {
    hw::OpShape op;
    op.cls = hw::OpClass::ATTENTION;
    op.m = 1, op.n = 2048, op.k = 128, op.n_head = 32, op.n_head_kv = 8;
    for (auto _ : state) benchmark::DoNotOptimize(device().estimate(op));
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NpuAttentionEstimate);

void BM_NpuElementwiseEstimate(benchmark::State& state) {
    hw::OpShape op;
    op.cls = hw::OpClass::ELEMENTWISE;
    op.in_bytes = op.out_bytes = 4096 * 2;
    for (auto _ : state) benchmark::DoNotOptimize(device().estimate(op));
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NpuElementwiseEstimate);

void BM_PimLayoutPlan(benchmark::State& state) {
    for (auto _ : state)
        benchmark::DoNotOptimize(layout::plan_pim_layout(4096, 11008, DType::F16, {}, layout::MemoryOrganisation{}));
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PimLayoutPlan);

void BM_PimToNzBlockCost(benchmark::State& state) {
    const layout::NpuDataPath path;
    for (auto _ : state)
        benchmark::DoNotOptimize(layout::block_conversion_cost(layout::ConversionKind::PIM_TO_NZ,
                                                               layout::ConversionEngine::LOAD_PATH, 16, 512,
                                                               DType::F16, path, 24, 88));
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PimToNzBlockCost);

}  // namespace

BENCHMARK_MAIN();
