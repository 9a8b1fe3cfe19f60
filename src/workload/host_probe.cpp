#include "workload/host_probe.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "core/error.h"
#include "core/memory_info.h"
#include "graph/op_record.h"
#include "hw/cpu/host_engine_device.h"
#include "runtime/batcher.h"
#include "runtime/engine.h"
#include "runtime/warmup.h"
#include "sim/op_shape.h"
#include "sim/report_files.h"

namespace duet::workload {
namespace {

using hw::cpu::HostProfile;

struct OpSample {
    graph::OpKind kind;
    hw::OpShape shape;  // as the simulator sees the record, activations in f32 (the engine's)
    double ns;
};

struct StepSample {
    int64_t t_ns = 0;
    int64_t n_seq = 0;
    double ops_ns = 0;                     // the step's operators, OUTPUT markers excluded
    std::vector<hw::OpShape> outputs;      // its OUTPUT records (priced by the fitted model later)
    bool ends_phase = false;  // the next record is after a pause: its wall (t[i+1] - t[i]) is unknown
};

// Least squares y ~ X b with b >= 0: features whose coefficient comes out negative are dropped
// (the most negative first) and the rest refitted. Columns are scaled to [-1, 1] before solving.
std::vector<double> fit_nonnegative(const std::vector<std::vector<double>>& x, const std::vector<double>& y) {
    const size_t d = x.empty() ? 0 : x[0].size();
    std::vector<double> scale(d, 0.0);
    for (const auto& row : x)
        for (size_t j = 0; j < d; ++j) scale[j] = std::max(scale[j], std::fabs(row[j]));
    std::vector<bool> active(d);
    for (size_t j = 0; j < d; ++j) active[j] = scale[j] > 0;
    for (;;) {
        std::vector<size_t> cols;
        for (size_t j = 0; j < d; ++j)
            if (active[j]) cols.push_back(j);
        std::vector<double> b(d, 0.0);
        if (cols.empty() || x.size() < cols.size()) return b;
        const size_t n = cols.size();
        std::vector<std::vector<double>> a(n, std::vector<double>(n + 1, 0.0));  // normal equations | rhs
        for (size_t i = 0; i < x.size(); ++i)
            for (size_t p = 0; p < n; ++p) {
                const double xp = x[i][cols[p]] / scale[cols[p]];
                for (size_t q = 0; q < n; ++q) a[p][q] += xp * x[i][cols[q]] / scale[cols[q]];
                a[p][n] += xp * y[i];
            }
        bool singular = false;
        for (size_t p = 0; p < n && !singular; ++p) {  // Gauss-Jordan, partial pivoting
            size_t piv = p;
            for (size_t r = p + 1; r < n; ++r)
                if (std::fabs(a[r][p]) > std::fabs(a[piv][p])) piv = r;
            if (std::fabs(a[piv][p]) < 1e-12) singular = true;
            std::swap(a[p], a[piv]);
            for (size_t r = 0; r < n && !singular; ++r) {
                if (r == p) continue;
                const double f = a[r][p] / a[p][p];
                for (size_t q = p; q <= n; ++q) a[r][q] -= f * a[p][q];
            }
        }
        size_t worst = d;
        for (size_t p = 0; p < n && !singular; ++p) {
            b[cols[p]] = a[p][n] / a[p][p] / scale[cols[p]];
            if (b[cols[p]] < 0 && (worst == d || b[cols[p]] < b[worst])) worst = cols[p];
        }
        if (singular) worst = cols.back();  // a feature the data cannot tell apart: drop the last
        if (worst == d) return b;
        active[worst] = false;
    }
}

double shape_bytes(const hw::OpShape& s) { return double(s.weight_bytes + s.in_bytes + s.out_bytes); }

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    const size_t mid = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(mid), v.end());
    return v[mid];
}

// Robust least squares: samples are grouped by the octave of every feature (a key of
// floor(log2) per feature), each group gives one point of its features' and time's medians (a
// thread preempted by another process makes single operators tens of times slower; the median of
// a group ignores them), and the groups' points are fitted (fit_nonnegative) in relative terms:
// each point's row and time are divided by its time, so a 15 us decode attention and a 10 ms
// prefill one are fitted to the same relative accuracy.
struct Grouped {
    std::map<std::vector<int>, std::pair<std::vector<std::vector<double>>, std::vector<double>>> groups;
    void add(const std::vector<double>& features, double ns) {
        std::vector<int> key;
        for (double f : features) key.push_back(f > 0 ? int(std::floor(std::log2(f))) : -1);
        auto& g = groups[key];
        g.first.push_back(features);
        g.second.push_back(ns);
    }
    std::vector<double> fit() const {
        std::vector<std::vector<double>> x;
        std::vector<double> y;
        for (const auto& [key, g] : groups) {
            std::vector<double> row{1.0};
            for (size_t j = 0; j < g.first[0].size(); ++j) {
                std::vector<double> col;
                for (const auto& f : g.first) col.push_back(f[j]);
                row.push_back(median(col));
            }
            const double t = median(g.second);
            if (t <= 0) continue;
            for (double& v : row) v /= t;
            x.push_back(row);
            y.push_back(1.0);
        }
        return fit_nonnegative(x, y);
    }
};

hw::cpu::LinearCost fit_linear(const std::vector<OpSample>& ops, hw::OpClass cls) {
    Grouped g;
    for (const OpSample& o : ops)
        if (o.shape.cls == cls && o.kind != graph::OpKind::OUTPUT) g.add({shape_bytes(o.shape)}, o.ns);
    const std::vector<double> b = g.fit();
    return {b.size() > 0 ? b[0] : 0.0, b.size() > 1 ? b[1] : 0.0};
}

bool is_matmul(graph::OpKind k) {
    return k == graph::OpKind::MATMUL || k == graph::OpKind::MOE_MATMUL || k == graph::OpKind::HEAD_MATMUL;
}

// Median over the records of one (dtype, m) of ns per weight byte, each record weighted by its
// bytes (the big matrices dominate a step as they dominate its time).
double weighted_median_rate(std::vector<std::pair<double, double>> rate_bytes) {
    std::sort(rate_bytes.begin(), rate_bytes.end());
    double total = 0;
    for (const auto& [r, b] : rate_bytes) total += b;
    double acc = 0;
    for (const auto& [r, b] : rate_bytes)
        if ((acc += b) >= total / 2) return r;
    return rate_bytes.empty() ? 0.0 : rate_bytes.back().first;
}

void fit_profile(HostProfile& p, const std::vector<OpSample>& ops, const std::vector<StepSample>& steps) {
    std::map<DType, std::map<int64_t, std::vector<std::pair<double, double>>>> mm;  // dtype -> m -> (ns/B, B)
    Grouped attention;
    for (const OpSample& o : ops) {
        if (is_matmul(o.kind) && o.shape.weight_bytes > 0) {
            const double bytes = double(o.shape.weight_bytes);
            mm[o.shape.weight_dtype][o.shape.m].push_back({o.ns / bytes, bytes});
        } else if (o.shape.cls == hw::OpClass::ATTENTION) {
            attention.add({double(o.shape.weight_bytes), o.shape.flops}, o.ns);
        }
    }
    for (const auto& [dtype, rows] : mm)
        for (const auto& [m, samples] : rows) p.matmul[dtype][m] = weighted_median_rate(samples);
    const std::vector<double> a = attention.fit();
    if (a.size() == 3) p.attention_ns = a[0], p.attention_ns_per_kv_byte = a[1], p.attention_ns_per_flop = a[2];
    p.copy = fit_linear(ops, hw::OpClass::COPY);
    p.elementwise = fit_linear(ops, hw::OpClass::ELEMENTWISE);
    const hw::cpu::HostEngineDevice dev(p);  // prices the OUTPUT markers as the simulator will
    std::map<int64_t, std::vector<double>> host_by_seqs;  // sequences in the step -> host work
    for (size_t i = 0; i + 1 < steps.size(); ++i) {
        if (steps[i].ends_phase || steps[i].n_seq == 0) continue;
        double host = double(steps[i + 1].t_ns - steps[i].t_ns) - steps[i].ops_ns;
        for (const hw::OpShape& s : steps[i].outputs) host -= dev.estimate(s).t_ns;
        host_by_seqs[steps[i].n_seq].push_back(host);
    }
    std::vector<std::vector<double>> sx;
    std::vector<double> sy;
    for (const auto& [n, v] : host_by_seqs) {
        sx.push_back({1.0, double(n)});
        sy.push_back(median(v));
    }
    const std::vector<double> s = fit_nonnegative(sx, sy);
    if (s.size() == 2) p.step_ns = s[0], p.step_ns_per_seq = s[1];
}

std::string cpu_model_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("model name", 0) == 0) {
            const size_t colon = line.find(':');
            if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
        }
    return "unknown CPU";
}

std::string utc_now() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// The raw operator timings, one CSV row each (`duet calibrate --host-profile FILE --samples CSV`).
void write_samples(const std::string& path, const std::vector<OpSample>& ops) {
    std::string t = "kind,class,m,n,k,weight_dtype,weight_bytes,in_bytes,out_bytes,flops,ns\n";
    for (const OpSample& o : ops) {
        const hw::OpShape& s = o.shape;
        t += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", graph::op_kind_name(o.kind), int(s.cls), s.m, s.n, s.k,
                         dtype_name(s.weight_dtype), s.weight_bytes, s.in_bytes, s.out_bytes, s.flops, o.ns);
    }
    sim::write_file_atomic(path, t);
}

}  // namespace

HostProfile probe_host(const std::string& model_path, const HostProbeOptions& o,
                       const std::function<void(const std::string&)>& progress) {
    runtime::WarmupOptions wo;
    wo.progress = false;
    const std::shared_ptr<const runtime::Model> model = runtime::load_model(model_path, wo);
    const model::Hparams& hp = model->hparams();
    const int64_t ctx_train = hp.n_ctx_train > 0 ? hp.n_ctx_train : 4096;
    const int64_t long_prompt = std::min(o.long_prompt, ctx_train - o.decode_tokens - 1);
    if (long_prompt < 16)
        fail("{}: a trained context of {} tokens is too short for the host probe (allowed: at least {})", model_path,
             ctx_train, 17 + o.decode_tokens);
    runtime::EngineOptions eo;
    eo.n_threads = o.threads;
    eo.n_seq_max = o.max_batch;
    eo.n_ctx = std::min(ctx_train, long_prompt + o.decode_tokens + 1);
    auto engine = std::make_unique<runtime::Engine>(model, eo);
    const int threads = engine->pool().size();

    std::vector<OpSample> ops;
    std::vector<StepSample> steps;  // the wall of step i is t[i+1] - t[i], within a phase
    engine->dispatcher().set_timer([&](const graph::OpRecord& r, int64_t ns) {
        if (steps.empty()) return;  // engine warm-up forwards outside the batcher's steps
        const hw::OpShape s = sim::to_op_shape(r, DType::F32);
        if (r.kind == graph::OpKind::OUTPUT) {
            steps.back().outputs.push_back(s);
            return;
        }
        steps.back().ops_ns += double(ns);
        ops.push_back({r.kind, s, double(ns)});
    });
    runtime::BatcherOptions bo;
    bo.n_parallel = o.max_batch;
    bo.max_queue = 4 * o.max_batch;
    bo.prefix_cache = false;  // every prompt token is computed
    bo.step_token_budget = o.step_tokens;
    bo.on_step = [&](const runtime::StepRecord& r) {
        steps.push_back({r.t_ns, int64_t(r.step.chunks.size()), 0.0, {}, false});
    };
    runtime::Batcher batcher(std::move(engine), bo);
    std::mt19937_64 rng(o.seed);
    std::uniform_int_distribution<int32_t> token(0, int32_t(hp.n_vocab) - 1);
    auto phase = [&](int64_t n_req, int64_t prompt, int64_t gen, bool keep) {
        const size_t first_step = steps.size(), first_op = ops.size();
        for (int64_t i = 0; i < n_req; ++i) {
            runtime::GenRequest r;
            r.prompt.resize(size_t(prompt));
            for (int32_t& t : r.prompt) t = token(rng);
            r.sampling.temperature = 0;
            r.max_tokens = gen;
            r.ignore_eos = true;
            const runtime::SubmitStatus st = batcher.submit(std::move(r));
            if (st != runtime::SubmitStatus::ACCEPTED)
                fail("{}: the host probe's request was refused ({})", model_path, runtime::submit_status_name(st));
        }
        batcher.wait_idle();
        if (!keep) {  // warm-up: scratch allocation and first touches
            steps.resize(first_step);
            ops.resize(first_op);
        } else if (!steps.empty()) {
            steps.back().ends_phase = true;
        }
        if (progress && keep)
            progress(fmt::format("{} request(s) of {} prompt + {} output tokens: {} steps", n_req, prompt, gen,
                                 steps.size() - first_step));
    };
    phase(std::min<int64_t>(4, o.max_batch), long_prompt, 4, false);
    for (int64_t b = 1; b <= o.max_batch; b *= 2) phase(b, 32, o.decode_tokens, true);
    phase(1, long_prompt, 4, true);
    phase(1, long_prompt / 4, 4, true);
    phase(std::min<int64_t>(4, o.max_batch), long_prompt, o.decode_tokens, true);  // chunks mixed with decode
    phase(o.max_batch, long_prompt / 4, o.decode_tokens, true);

    HostProfile p;
    p.cpu = cpu_model_name();
    p.threads = threads;
    p.model = std::filesystem::path(model_path).filename().string();
    p.measured = utc_now();
    p.kv_block_tokens = eo.block_tokens;
    p.memory_gib = double(total_memory_bytes()) / double(uint64_t(1) << 30);
    fit_profile(p, ops, steps);
    if (!o.samples_path.empty()) write_samples(o.samples_path, ops);
    if (p.matmul.empty()) fail("{}: the host probe timed no matmul (is it a transformer model?)", model_path);
    return p;
}

}  // namespace duet::workload
