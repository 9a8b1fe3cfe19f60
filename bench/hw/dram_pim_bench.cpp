// Speed of the DRAM and PIM models (issue 3 item 6). items_per_second = operators (or memory
// patterns) evaluated per second. The analytical paths should be microseconds per op; the
// command-level PIM GEMV of 4096 x 4096 fp16 should take well under a second.
#include <benchmark/benchmark.h>

#include <map>
#include <string>

#include "hw/dram/mem_workload.h"
#include "hw/memory_presets.h"
#include "hw/pim/pim_device.h"
#include "hw/pim/pim_gemv.h"

using namespace duet;
using namespace duet::hw;

namespace {

const pim::PimSpec& pim_spec(const char* name) {
    static std::map<std::string, pim::PimSpec> cache;
    auto it = cache.find(name);
    if (it == cache.end()) it = cache.emplace(name, load_pim_preset(name)).first;
    return it->second;
}

pim::GemvShape gemv(int64_t m, int64_t k, DType t, int align = 128) {
    pim::GemvShape g;
    g.m = m;
    g.k = k;
    g.dtype = t;
    g.alignment_bits = align;
    return g;
}

void BM_MemAnalytical(benchmark::State& st, const char* mem, dram::Pattern p, uint64_t stride) {
    const dram::DramSpec s = load_memory_preset(mem);
    dram::MemWorkload w;
    w.pattern = p;
    w.bytes = 64 << 20;
    w.stride_bytes = stride;
    for (auto _ : st) benchmark::DoNotOptimize(dram::estimate_memory(s, w));
    st.SetItemsProcessed(st.iterations());
}
BENCHMARK_CAPTURE(BM_MemAnalytical, lpddr5_stream_64MiB, "lpddr5", dram::Pattern::STREAM, 0);
BENCHMARK_CAPTURE(BM_MemAnalytical, hbm3_random_64MiB, "hbm3", dram::Pattern::RANDOM, 0);
BENCHMARK_CAPTURE(BM_MemAnalytical, lpddr5_strided4K_64MiB, "lpddr5", dram::Pattern::STRIDED, 4096);

void BM_MemCommand(benchmark::State& st, const char* mem, dram::Pattern p) {
    const dram::DramSpec s = load_memory_preset(mem);
    dram::MemWorkload w;
    w.pattern = p;
    w.bytes = 1 << 20;
    for (auto _ : st) benchmark::DoNotOptimize(dram::simulate_memory(s, w));
    st.SetItemsProcessed(st.iterations());
    st.SetBytesProcessed(int64_t(st.iterations()) * int64_t(w.bytes));
}
BENCHMARK_CAPTURE(BM_MemCommand, lpddr5_stream_1MiB, "lpddr5", dram::Pattern::STREAM)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MemCommand, hbm3_random_1MiB, "hbm3", dram::Pattern::RANDOM)->Unit(benchmark::kMillisecond);

void BM_PimGemvAnalytical(benchmark::State& st, const char* name, DType t) {
    const auto& s = pim_spec(name);
    const auto g = gemv(4096, 4096, t);
    for (auto _ : st) benchmark::DoNotOptimize(pim::estimate_gemv(s, g));
    st.SetItemsProcessed(st.iterations());
}
BENCHMARK_CAPTURE(BM_PimGemvAnalytical, fimdram_4096x4096_fp16, "pim_hbm2_fimdram", DType::F16);
BENCHMARK_CAPTURE(BM_PimGemvAnalytical, aim_4096x4096_bf16, "pim_gddr6_aim", DType::BF16);
BENCHMARK_CAPTURE(BM_PimGemvAnalytical, lpddr5x_4096x4096_fp16, "pim_lpddr5x_bank", DType::F16);
BENCHMARK_CAPTURE(BM_PimGemvAnalytical, hbm3_4096x4096_fp16, "pim_hbm3_bank", DType::F16);

void BM_PimDeviceEstimate(benchmark::State& st) {
    const pim::PimDevice dev(pim_spec("pim_hbm3_bank"), 128);
    OpShape op;
    op.cls = OpClass::GEMV;
    op.m = 1;
    op.n = 11008;
    op.k = 4096;
    for (auto _ : st) benchmark::DoNotOptimize(dev.estimate(op));
    st.SetItemsProcessed(st.iterations());
}
BENCHMARK(BM_PimDeviceEstimate);

void BM_PimGemvCommand(benchmark::State& st, const char* name, DType t) {
    const auto& s = pim_spec(name);
    const auto g = gemv(4096, 4096, t);
    for (auto _ : st) benchmark::DoNotOptimize(pim::simulate_gemv(s, g));
    st.SetItemsProcessed(st.iterations());
}
BENCHMARK_CAPTURE(BM_PimGemvCommand, fimdram_4096x4096_fp16, "pim_hbm2_fimdram", DType::F16)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PimGemvCommand, aim_4096x4096_bf16, "pim_gddr6_aim", DType::BF16)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PimGemvCommand, lpddr5x_4096x4096_fp16, "pim_lpddr5x_bank", DType::F16)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PimGemvCommand, hbm3_4096x4096_fp16, "pim_hbm3_bank", DType::F16)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
