// bench_norm_fusion [--threads N] [--rounds R] [--prompt P] [--gen G] MODEL.gguf
// RMSNorm fused into the next matmul's input quantisation (graph/fuse_rmsnorm_matmul.h), measured
// in one process so the two sides share the machine's state (a shared box: compare ratios, not
// absolute times). Rounds alternate the two sides; medians are reported, of wall time and of the
// process's CPU time (with --threads 1 the CPU time is the work itself, whatever else the cores
// run: the figure to quote on a loaded machine).
//   engine: the --fuse graph without the norm pass (sibling matmuls, RoPE + KV write) against the
//           same graph with it: prefill of P tokens and G decode steps; the logits of both sides
//           are compared bit for bit.
//   kernel: layer 0's gate|up matrix at m = 1 and m = P: kernels::rmsnorm per row into f32 rows then
//           kernels::matmul, against kernels::rmsnorm_quantize then kernels::matmul_quantized.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/bench_args.h"
#include "core/error.h"
#include "core/timer.h"
#include "graph/fuse_matmuls.h"
#include "graph/fuse_rmsnorm_matmul.h"
#include "graph/fuse_rope_kv.h"
#include "kernels/kernels.h"
#include "runtime/engine.h"
#include "model/hparams.h"

using namespace duet;
using namespace duet::runtime;

namespace {

int64_t cpu_ns() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

// The --fuse graph of the model before (norm = false) or after the RMSNorm pass, with the
// file's matmul dtypes (what Engine(model, {fuse}) builds).
graph::Graph fused_graph(const Model& m, bool norm) {
    graph::Graph g = graph::build_graph(model_shape(m.hparams(), m.weights().matrix_dtype(), DType::F16));
    const PlainWeightSource ws(m.weights());
    for (graph::Node& n : g.nodes)
        if (n.kind == graph::OpKind::MATMUL || n.kind == graph::OpKind::EMBED)
            n.dtype = ws.tensor(n.role, n.layer).dtype;
    g = graph::FuseRopeKvWrite().run(graph::FuseSiblingMatmuls().run(g));
    return norm ? graph::FuseRmsNormMatmul().run(g) : g;
}

struct Side {
    std::unique_ptr<Engine> engine;
    std::vector<double> prefill_ms, decode_ms, prefill_cpu_ms, decode_cpu_ms;
    std::vector<float> logits;
};

// One round: a fresh sequence, prefill of `prompt`, then `gen` greedy decode steps.
void round(Side& s, const std::vector<int32_t>& prompt, int64_t gen) {
    Engine& e = *s.engine;
    SequenceKv seq;
    ForwardOutput out;
    SeqInput in{prompt, &seq, false};
    int64_t t0 = now_ns(), c0 = cpu_ns();
    if (e.forward({&in, 1}, out) != ForwardStatus::OK) fail("bench: prefill did not fit");
    s.prefill_ms.push_back(double(now_ns() - t0) / 1e6);
    s.prefill_cpu_ms.push_back(double(cpu_ns() - c0) / 1e6);
    s.logits.assign(out.last(0), out.last(0) + out.n_vocab);
    t0 = now_ns();
    c0 = cpu_ns();
    for (int64_t i = 0; i < gen; ++i) {
        const float* l = out.last(0);
        int32_t next = 0;
        for (int64_t j = 1; j < out.n_vocab; ++j)
            if (l[j] > l[next]) next = int32_t(j);
        SeqInput step{std::span<const int32_t>(&next, 1), &seq, false};
        if (e.forward({&step, 1}, out) != ForwardStatus::OK) fail("bench: decode did not fit");
    }
    s.decode_ms.push_back(double(now_ns() - t0) / 1e6 / double(std::max<int64_t>(1, gen)));
    s.decode_cpu_ms.push_back(double(cpu_ns() - c0) / 1e6 / double(std::max<int64_t>(1, gen)));
    seq.release(e.kv_cache());
}

constexpr const char* kProgram = "bench_norm_fusion";
constexpr const char* kUsage = "usage: bench_norm_fusion [--threads N] [--rounds R] [--prompt P] [--gen G] MODEL.gguf";

}  // namespace

int main(int argc, char** argv) try {
    int threads = 0, rounds = 5;
    int64_t n_prompt = 256, n_gen = 32;
    std::string path;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto number = [&](int lo) {  // a flag's value as an integer of at least lo
            return int(duet::bench::parse_int(kProgram, a, duet::bench::flag_value(kProgram, argc, argv, i), lo));
        };
        if (a == "--help" || a == "-h") {
            std::printf("%s\n", kUsage);
            return 0;
        } else if (a == "--threads")
            threads = number(0);
        else if (a == "--rounds")
            rounds = number(1);
        else if (a == "--prompt")
            n_prompt = number(1);
        else if (a == "--gen")
            n_gen = number(0);
        else if (a.rfind("-", 0) == 0)
            duet::bench::usage_error(kProgram, "unknown option " + a + " (allowed: --threads, --rounds, --prompt, --gen, --help)");
        else
            path = a;
    }
    if (path.empty()) duet::bench::usage_error(kProgram, std::string("no model file given; ") + kUsage);
    auto model = Model::load(path);
    EngineOptions o;
    o.n_threads = threads;
    o.kv_type = DType::F16;
    o.n_ctx = n_prompt + n_gen + 1;
    Side off, on;
    off.engine = std::make_unique<Engine>(model, o, fused_graph(*model, false));
    on.engine = std::make_unique<Engine>(model, o, fused_graph(*model, true));
    int joined = 0;
    for (const graph::Node& n : on.engine->graph().nodes) joined += n.norm != graph::WeightRole::NONE;
    const int64_t nv = model->hparams().n_vocab;
    std::vector<int32_t> prompt;
    for (int64_t i = 0; i < n_prompt; ++i) prompt.push_back(int32_t((i * 7919 + 13) % nv));
    round(off, prompt, 1);  // warm-up: page the weights in, size the scratch
    round(on, prompt, 1);
    for (Side* s : {&off, &on})  // drop the warm-up's figures
        for (auto* v : {&s->prefill_ms, &s->decode_ms, &s->prefill_cpu_ms, &s->decode_cpu_ms}) v->clear();
    for (int r = 0; r < rounds; ++r) {
        round(r % 2 ? on : off, prompt, n_gen);
        round(r % 2 ? off : on, prompt, n_gen);
    }
    const bool same = off.logits.size() == on.logits.size() &&
                      std::memcmp(off.logits.data(), on.logits.data(), off.logits.size() * sizeof(float)) == 0;
    std::printf("model %s, %s kernels, %d threads, %d rounds, %d norms fused per forward, logits %s\n", path.c_str(),
                kernels::kernel_isa(), off.engine->pool().size(), rounds, joined, same ? "bit-identical" : "DIFFER");
    auto line = [](const char* what, const std::vector<double>& a, const std::vector<double>& b) {
        std::printf("%s: %.3f ms -> %.3f ms (x %.3f)\n", what, median(a), median(b), median(b) / median(a));
    };
    const std::string pre = "engine prefill " + std::to_string(n_prompt) + " tok";
    line((pre + ", wall").c_str(), off.prefill_ms, on.prefill_ms);
    line((pre + ", CPU").c_str(), off.prefill_cpu_ms, on.prefill_cpu_ms);
    line("engine decode per token, wall", off.decode_ms, on.decode_ms);
    line("engine decode per token, CPU", off.decode_cpu_ms, on.decode_cpu_ms);

    // Kernel level: layer 0's gate|up (bound by the fused engine; one dtype in every file the
    // generator writes, while a q4_k file may keep attn_v apart) with its FFN norm.
    const PlainWeightSource& ws = on.engine->plain_weights();
    const model::TensorRef& w = ws.tensor(graph::WeightRole::FFN_GATE_UP, 0);
    const float* nw = ws.tensor(graph::WeightRole::FFN_NORM, 0).f32();
    const int64_t k = w.cols, n = w.rows;
    ThreadPool& pool = on.engine->pool();
    for (int64_t m : {int64_t(1), n_prompt}) {
        std::vector<float> x(size_t(m * k)), xn(size_t(m * k)), y(size_t(m * n));
        for (size_t i = 0; i < x.size(); ++i) x[i] = float(int((i * 2654435761u) % 2001) - 1000) * 1e-3f;
        const kernels::ActFormat f = kernels::act_format(w.dtype);
        std::vector<uint8_t> xq(kernels::act_bytes(f, m, k));
        const int reps = m == 1 ? 200 : 3;
        std::vector<double> ta, tb;  // process CPU time per call, us
        for (int r = 0; r < 2 * rounds + 1; ++r) {
            int64_t t0 = cpu_ns();
            for (int i = 0; i < reps; ++i) {
                pool.parallel_for(m, 4, [&](int64_t b, int64_t e) {
                    for (int64_t j = b; j < e; ++j)
                        kernels::rmsnorm(&x[size_t(j * k)], nw, &xn[size_t(j * k)], k, 1e-5f);
                });
                kernels::matmul(xn.data(), m, k, k, w.data, w.dtype, w.row_stride_bytes, n, y.data(), n, pool);
            }
            ta.push_back(double(cpu_ns() - t0) / 1e3 / reps);
            t0 = cpu_ns();
            for (int i = 0; i < reps; ++i) {
                kernels::rmsnorm_quantize(x.data(), k, nullptr, m, k, nw, 1e-5f, f, xq.data(), pool);
                kernels::matmul_quantized(xq.data(), f, m, k, w.data, w.dtype, w.row_stride_bytes, n, y.data(), n,
                                          pool);
            }
            tb.push_back(double(cpu_ns() - t0) / 1e3 / reps);
        }
        const double a = median(ta), b = median(tb);
        std::printf(
            "kernel %s gate|up %lldx%lld, m %lld: rmsnorm + matmul %.1f us -> rmsnorm_quantize + "
            "matmul_quantized %.1f us CPU (x %.3f)\n",
            dtype_name(w.dtype), (long long)n, (long long)k, (long long)m, a, b, b / a);
    }
    return same ? 0 : 1;
} catch (const Error& e) {
    std::fprintf(stderr, "%s: error: %s\n", kProgram, e.what());
    return 2;
}
