// A whole-model oracle in the spirit of llama2.c's run.c: the obvious forward pass in double
// precision, contiguous KV, no batching, no kernels except dequantize_row for reading
// weights. The engine (paged KV, ragged batch, SIMD kernels) must match it.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/kernels.h"
#include "runtime/engine.h"
#include "test_models.h"

using WR = duet::graph::WeightRole;

using namespace duet;
using namespace duet::runtime;

namespace {

using Vec = std::vector<double>;

Vec row_of(const model::TensorRef& t, int64_t r) {
    std::vector<float> f(size_t(t.cols));
    kernels::dequantize_row(static_cast<const uint8_t*>(t.data) + size_t(r) * t.row_stride_bytes, t.dtype, f.data(),
                            t.cols);
    return Vec(f.begin(), f.end());
}

struct Mat {  // dequantised once: [rows][cols]
    int64_t rows = 0, cols = 0;
    Vec w;
    explicit Mat(const model::TensorRef& t) : rows(t.rows), cols(t.cols) {
        for (int64_t r = 0; r < rows; ++r) {
            Vec v = row_of(t, r);
            w.insert(w.end(), v.begin(), v.end());
        }
    }
    Vec mul(const Vec& x) const {
        Vec y(size_t(rows), 0.0);
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) y[size_t(r)] += w[size_t(r * cols + c)] * x[size_t(c)];
        return y;
    }
};

Vec rmsnorm(const Vec& x, const model::TensorRef& w, double eps) {
    double ss = 0;
    for (double v : x) ss += v * v;
    const double inv = 1.0 / std::sqrt(ss / double(x.size()) + eps);
    Vec y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * w.f32()[i];
    return y;
}

void rope(Vec& x, int64_t n_head, int64_t hd, int64_t n_rot, int64_t pos, const model::Hparams& hp,
          const float* factors) {
    for (int64_t h = 0; h < n_head; ++h) {
        for (int64_t i = 0; i < n_rot / 2; ++i) {
            double theta = double(pos) * hp.rope_freq_scale * std::pow(double(hp.rope_freq_base), -2.0 * i / n_rot);
            if (factors) theta /= factors[i];
            const int64_t a = hp.rope_neox ? i : 2 * i, b = hp.rope_neox ? i + n_rot / 2 : 2 * i + 1;
            double& x0 = x[size_t(h * hd + a)];
            double& x1 = x[size_t(h * hd + b)];
            const double r0 = x0 * std::cos(theta) - x1 * std::sin(theta);
            const double r1 = x0 * std::sin(theta) + x1 * std::cos(theta);
            x0 = r0;
            x1 = r1;
        }
    }
}

// Logits of every position of `toks`.
std::vector<Vec> oracle(const Model& m, const std::vector<int32_t>& toks) {
    const model::Hparams& hp = m.hparams();
    const model::Weights& w = m.weights();
    const int64_t hd = hp.head_dim, nkv = hp.n_embd_kv();
    std::vector<std::vector<Vec>> K(size_t(hp.n_layer)), V(size_t(hp.n_layer));
    std::vector<Mat> mats;
    for (const auto& l : w.layers)
        for (const auto* t : {&l[WR::ATTN_Q], &l[WR::ATTN_K], &l[WR::ATTN_V], &l[WR::ATTN_OUT], &l[WR::FFN_GATE], &l[WR::FFN_UP], &l[WR::FFN_DOWN]}) mats.emplace_back(*t);
    const Mat out_m(w[WR::LM_HEAD]);
    const float* factors = w[WR::ROPE_FREQS].present() ? w[WR::ROPE_FREQS].f32() : nullptr;
    std::vector<Vec> logits;
    for (size_t p = 0; p < toks.size(); ++p) {
        Vec x = row_of(w[WR::TOKEN_EMBD], toks[p]);
        for (int64_t il = 0; il < hp.n_layer; ++il) {
            const auto& lw = w.layers[size_t(il)];
            const Mat* M = &mats[size_t(il * 7)];
            Vec xn = rmsnorm(x, lw[WR::ATTN_NORM], hp.norm_eps);
            Vec q = M[0].mul(xn), k = M[1].mul(xn), v = M[2].mul(xn);
            if (hp.qkv_bias) {
                for (size_t i = 0; i < q.size(); ++i) q[i] += lw.bias_of(WR::ATTN_Q).f32()[i];
                for (size_t i = 0; i < k.size(); ++i) k[i] += lw.bias_of(WR::ATTN_K).f32()[i], v[i] += lw.bias_of(WR::ATTN_V).f32()[i];
            }
            rope(q, hp.n_head, hd, hp.n_rot, int64_t(p), hp, factors);
            rope(k, hp.n_head_kv, hd, hp.n_rot, int64_t(p), hp, factors);
            K[size_t(il)].push_back(k);
            V[size_t(il)].push_back(v);
            Vec att(size_t(hp.n_embd_q()), 0.0);
            for (int64_t h = 0; h < hp.n_head; ++h) {
                const int64_t g = h / hp.n_gqa();
                Vec s(p + 1);
                double mx = -1e300, sum = 0;
                for (size_t t = 0; t <= p; ++t) {
                    double d = 0;
                    for (int64_t i = 0; i < hd; ++i) d += q[size_t(h * hd + i)] * K[size_t(il)][t][size_t(g * hd + i)];
                    s[t] = d / std::sqrt(double(hd));
                    mx = std::max(mx, s[t]);
                }
                for (double& e : s) sum += (e = std::exp(e - mx));
                for (size_t t = 0; t <= p; ++t)
                    for (int64_t i = 0; i < hd; ++i)
                        att[size_t(h * hd + i)] += s[t] / sum * V[size_t(il)][t][size_t(g * hd + i)];
            }
            Vec o = M[3].mul(att);
            for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
            xn = rmsnorm(x, lw[WR::FFN_NORM], hp.norm_eps);
            Vec gt = M[4].mul(xn), up = M[5].mul(xn);
            for (size_t i = 0; i < gt.size(); ++i) gt[i] = gt[i] / (1.0 + std::exp(-gt[i])) * up[i];
            Vec d = M[6].mul(gt);
            for (size_t i = 0; i < x.size(); ++i) x[i] += d[i];
        }
        (void)nkv;
        logits.push_back(out_m.mul(rmsnorm(x, w[WR::OUTPUT_NORM], hp.norm_eps)));
    }
    return logits;
}

// Worst relative difference (max |engine - oracle| / max |oracle| per position) over a ragged
// batch of two sequences on 2-token KV blocks.
double engine_vs_oracle(const std::string& preset, const std::string& dtype) {
    const std::string path = test::generated_model(preset, dtype);
    if (path.empty()) return 1e30;
    auto m = Model::load(path);
    const int64_t nv = m->hparams().n_vocab;
    std::vector<int32_t> a, b;
    for (int i = 0; i < 9; ++i) a.push_back(int32_t((i * 31 + 3) % nv));
    for (int i = 0; i < 4; ++i) b.push_back(int32_t((i * 17 + 5) % nv));
    EngineOptions o;
    o.n_threads = 2;
    o.kv_type = DType::F32;
    o.n_ctx = 32;
    o.n_seq_max = 2;
    o.block_tokens = 2;
    Engine e(m, o);
    SequenceKv sa, sb;
    std::vector<SeqInput> batch = {{b, &sb, true}, {a, &sa, true}};
    ForwardOutput out;
    if (e.forward(batch, out) != ForwardStatus::OK) return 1e30;
    const std::vector<Vec> ra = oracle(*m, a), rb = oracle(*m, b);
    double worst = 0;
    for (size_t s = 0; s < 2; ++s) {
        const std::vector<Vec>& ref = s == 0 ? rb : ra;
        for (size_t p = 0; p < ref.size(); ++p) {
            double max_abs = 0, max_ref = 1e-9;
            for (int64_t j = 0; j < nv; ++j) {
                max_abs = std::max(max_abs, std::fabs(double(out.row(s, int64_t(p))[j]) - ref[p][size_t(j)]));
                max_ref = std::max(max_ref, std::fabs(ref[p][size_t(j)]));
            }
            worst = std::max(worst, max_abs / max_ref);
        }
    }
    sa.release(e.kv_cache());
    sb.release(e.kv_cache());
    return worst;
}

class OracleOnPreset : public ::testing::TestWithParam<std::string> {};

TEST_P(OracleOnPreset, EngineMatchesTheOracle) { EXPECT_LT(engine_vs_oracle(GetParam(), "f32"), 1e-4); }

// Quantised and half-precision weights: the oracle reads the same dequantised weights, the engine
// additionally rounds activations (q8 blocks for integer dot products, or f16), so agreement is
// bounded by that rounding (q8 activations: 2^-8 relative per element, compounded over the
// layers), not by 1e-4. Measured: f16/bf16 weights ~1e-6 (f32 activations), q8_0 0.035, q4_0,
// q4_k, q6_k 0.03-0.035 (all dominated by the q8 activation rounding).
TEST(Oracle, QuantisedWeightsStayCloseToTheOracle) {
    const std::pair<const char*, const char*> cases[] = {
        {"tiny-llama", "f16"}, {"tiny-llama", "bf16"}, {"tiny-llama", "q8_0"}, {"tiny-qwen2", "q4_0"},
        {"small-llama", "q4_k"}, {"small-llama", "q6_k"}};
    for (const auto& [preset, dtype] : cases) {
        if (std::getenv("DUET_PRINT_ORACLE")) std::printf("%s %s: %g\n", preset, dtype, engine_vs_oracle(preset, dtype));
        EXPECT_LT(engine_vs_oracle(preset, dtype), dtype[0] == 'q' ? 6e-2 : 1e-4) << preset << " " << dtype;
    }
}

INSTANTIATE_TEST_SUITE_P(Presets, OracleOnPreset,
                         ::testing::Values("tiny-llama", "tiny-llama3", "tiny-mistral", "tiny-qwen2"),
                         [](const auto& info) {
                             std::string n = info.param;
                             for (char& c : n)
                                 if (c == '-') c = '_';
                             return n;
                         });

}  // namespace
