// The synthetic weights keep activations finite and O(1) through every layer: a plain f32
// forward pass (written here for this check only; the engine's oracle is tests/reference/)
// over generated files of every tiny preset, including 32-layer variants.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/quant.h"
#include "format/gguf.h"
#include "model/arch_presets.h"
#include "model/synthetic_writer.h"

namespace duet::model {
namespace {

namespace fs = std::filesystem;

struct Forward {
    const format::GgufFile& f;
    Hparams hp;
    std::vector<float> rope_freqs;

    std::vector<float> load(const std::string& name) const {
        const auto& t = f.tensor(name);
        std::vector<float> out(size_t(t.n_elements()));
        const int64_t n = t.shape[0], rows = t.n_elements() / n;
        for (int64_t r = 0; r < rows; ++r)
            quant::dequantize_row(t.data + size_t(r) * row_bytes(t.dtype, n), t.dtype, out.data() + r * n, n);
        return out;
    }
    // y = W x for a ggml [in, out] matrix (out rows of `in` contiguous floats).
    static std::vector<float> matvec(const std::vector<float>& w, const std::vector<float>& x) {
        const size_t in = x.size(), out = w.size() / in;
        std::vector<float> y(out);
        for (size_t o = 0; o < out; ++o) {
            double s = 0;
            for (size_t i = 0; i < in; ++i) s += double(w[o * in + i]) * x[i];
            y[o] = float(s);
        }
        return y;
    }
    std::vector<float> rmsnorm(const std::vector<float>& x, const std::string& wname) const {
        const auto w = load(wname);
        double ss = 0;
        for (float v : x) ss += double(v) * v;
        const float scale = float(1.0 / std::sqrt(ss / double(x.size()) + hp.norm_eps));
        std::vector<float> y(x.size());
        for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * scale * w[i];
        return y;
    }
    void rope(std::vector<float>& v, int64_t n_heads, int64_t pos) const {
        for (int64_t h = 0; h < n_heads; ++h) {
            float* p = v.data() + h * hp.head_dim;
            for (int64_t i = 0; i < hp.n_rot / 2; ++i) {
                double theta = double(pos) * hp.rope_freq_scale *
                               std::pow(double(hp.rope_freq_base), -2.0 * double(i) / double(hp.n_rot));
                if (!rope_freqs.empty()) theta /= rope_freqs[size_t(i)];
                const int64_t a = hp.rope_neox ? i : 2 * i, b = hp.rope_neox ? i + hp.n_rot / 2 : 2 * i + 1;
                const float x0 = p[a], x1 = p[b], c = float(std::cos(theta)), s = float(std::sin(theta));
                p[a] = x0 * c - x1 * s;
                p[b] = x0 * s + x1 * c;
            }
        }
    }

    // Runs the tokens; returns the last logits and records the residual RMS after every layer.
    std::vector<float> run(const std::vector<int>& tokens, std::vector<double>& layer_rms) {
        if (hp.has_rope_freqs) rope_freqs = load("rope_freqs.weight");
        const auto emb = load("token_embd.weight");
        std::vector<std::vector<std::vector<float>>> kc(size_t(hp.n_layer)), vc(size_t(hp.n_layer));
        std::vector<float> x;
        for (size_t pos = 0; pos < tokens.size(); ++pos) {
            x.assign(emb.begin() + tokens[pos] * hp.n_embd, emb.begin() + (tokens[pos] + 1) * hp.n_embd);
            for (int64_t l = 0; l < hp.n_layer; ++l) {
                const std::string b = "blk." + std::to_string(l) + ".";
                auto xn = rmsnorm(x, b + "attn_norm.weight");
                auto q = matvec(load(b + "attn_q.weight"), xn), k = matvec(load(b + "attn_k.weight"), xn),
                     v = matvec(load(b + "attn_v.weight"), xn);
                if (hp.qkv_bias) {
                    const auto bq = load(b + "attn_q.bias"), bk = load(b + "attn_k.bias"), bv = load(b + "attn_v.bias");
                    for (size_t i = 0; i < q.size(); ++i) q[i] += bq[i];
                    for (size_t i = 0; i < k.size(); ++i) k[i] += bk[i], v[i] += bv[i];
                }
                rope(q, hp.n_head, int64_t(pos));
                rope(k, hp.n_head_kv, int64_t(pos));
                kc[size_t(l)].push_back(k);
                vc[size_t(l)].push_back(v);
                std::vector<float> att(size_t(hp.n_embd_q()), 0.0f);
                for (int64_t h = 0; h < hp.n_head; ++h) {
                    const int64_t kvh = h / hp.n_gqa();
                    std::vector<double> sc(pos + 1);
                    double mx = -1e300, sum = 0;
                    for (size_t t = 0; t <= pos; ++t) {
                        double d = 0;
                        for (int64_t i = 0; i < hp.head_dim; ++i)
                            d += double(q[size_t(h * hp.head_dim + i)]) *
                                 kc[size_t(l)][t][size_t(kvh * hp.head_dim + i)];
                        sc[t] = d / std::sqrt(double(hp.head_dim));
                        mx = std::max(mx, sc[t]);
                    }
                    for (double& s : sc) sum += (s = std::exp(s - mx));
                    for (size_t t = 0; t <= pos; ++t)
                        for (int64_t i = 0; i < hp.head_dim; ++i)
                            att[size_t(h * hp.head_dim + i)] +=
                                float(sc[t] / sum) * vc[size_t(l)][t][size_t(kvh * hp.head_dim + i)];
                }
                const auto o = matvec(load(b + "attn_output.weight"), att);
                for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
                xn = rmsnorm(x, b + "ffn_norm.weight");
                auto g = matvec(load(b + "ffn_gate.weight"), xn);
                const auto u = matvec(load(b + "ffn_up.weight"), xn);
                for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
                const auto d = matvec(load(b + "ffn_down.weight"), g);
                for (size_t i = 0; i < x.size(); ++i) x[i] += d[i];
                if (pos + 1 == tokens.size()) {
                    double ss = 0;
                    for (float v2 : x) ss += double(v2) * v2;
                    layer_rms.push_back(std::sqrt(ss / double(x.size())));
                }
            }
        }
        const auto xn = rmsnorm(x, "output_norm.weight");
        return matvec(hp.tied_output ? emb : load("output.weight"), xn);
    }
};

TEST(SyntheticForward, ActivationsStayFiniteThroughEveryLayer) {
    const fs::path dir = fs::temp_directory_path() / ("duet_synth_fwd_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    struct Case {
        const char* preset;
        const char* dtype;
        int64_t layers;
    };
    for (const Case& c : {Case{"tiny-llama", "f32", 0}, Case{"tiny-llama3", "f16", 0}, Case{"tiny-mistral", "q8_0", 0},
                          Case{"tiny-qwen2", "q4_0", 0}, Case{"small-llama", "q4_k", 0}, Case{"tiny-llama", "f32", 32},
                          Case{"tiny-qwen2", "f32", 32}, Case{"tiny-llama3", "bf16", 32}}) {
        SCOPED_TRACE(std::string(c.preset) + " " + c.dtype + " layers " + std::to_string(c.layers));
        const std::string path = (dir / "m.gguf").string();
        SyntheticOptions o;
        o.dtype = c.dtype;
        o.seed = 11;
        o.n_threads = 1;
        o.n_layer = c.layers;
        write_synthetic_model(path, arch_preset(c.preset), o);
        format::GgufFile f = format::GgufFile::open(path);
        Forward fw{f, hparams_from_gguf(f), {}};
        std::vector<double> rms;
        const auto logits = fw.run({1, 17, 300, 42, 5, 99}, rms);
        ASSERT_EQ(int64_t(rms.size()), fw.hp.n_layer);
        for (double r : rms) {
            EXPECT_TRUE(std::isfinite(r));
            EXPECT_LT(r, 8.0);  // the residual stream stays O(1)
        }
        double s = 0, s2 = 0;
        for (float v : logits) {
            ASSERT_TRUE(std::isfinite(v));
            s += v;
            s2 += double(v) * v;
        }
        const double n = double(logits.size()), sd = std::sqrt(s2 / n - (s / n) * (s / n));
        EXPECT_GT(sd, 0.5);  // not collapsed: greedy decoding has a clear choice
        EXPECT_LT(sd, 8.0);
    }
    fs::remove_all(dir);
}

}  // namespace
}  // namespace duet::model
