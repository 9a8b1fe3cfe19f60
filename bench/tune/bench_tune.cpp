// duet tune throughput: grid points of llama2-7b, 2048 prompt + 256 generated, through the same
// Evaluator `duet tune` uses (rigs and plans reused across points). Reports points/s per thread;
// `--benchmark_filter=Threads` runs 2 evaluator threads (the 2-core target: 10 000 points < 60 s
// means >= 167 points/s overall).
#include <benchmark/benchmark.h>

#include "core/log.h"
#include "tune/tune.h"

namespace {

using namespace duet::tune;

TuneOptions options(int64_t gen_len) {
    TuneOptions o;
    o.base.in.model = "llama2-7b";
    o.base.in.seq_len = 2048;
    o.base.in.gen_len = gen_len;
    o.space.only = {"reorder.prefetch_depth", "scheduling.zero_copy_switch", "scheduling.preconvert_first_token",
                    "memory.cache_limit_mb", "reorder.block_size_kb"};
    o.strategy = Strategy::GRID;
    o.sensitivity = false;
    return o;
}

// One evaluation per iteration, cycling through a 384-point grid (rigs built once per block size).
void BM_TunePoint(benchmark::State& state) {
    const TuneOptions o = options(256);
    const Space space = make_space(o);
    Evaluator ev(space, o.base, Objective::TBT);
    int64_t i = 0;
    const int64_t n = int64_t(space.size());
    for (auto _ : state) {
        Point p(space.dims().size());
        int64_t k = i++ % n;
        for (size_t d = space.dims().size(); d-- > 0;) {
            p[d] = int(k % int64_t(space.dims()[d].values.size()));
            k /= int64_t(space.dims()[d].values.size());
        }
        benchmark::DoNotOptimize(ev.evaluate(p));
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TunePoint)->Unit(benchmark::kMillisecond);

// The whole 384-point grid through run_tune with 1 or 2 evaluator threads.
void BM_TuneGridThreads(benchmark::State& state) {
    TuneOptions o = options(256);
    o.threads = int(state.range(0));
    int64_t points = 0;
    for (auto _ : state) points += int64_t(run_tune(o).points.size());
    state.SetItemsProcessed(points);
}
BENCHMARK(BM_TuneGridThreads)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

}  // namespace

// The simulator logs every point's prefill and decode at info: thousands of lines per run.
int main(int argc, char** argv) {
    duet::set_log_level("warn", "bench_tune");
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
