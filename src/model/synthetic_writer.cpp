#include "model/synthetic_writer.h"

#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "core/quant.h"
#include "core/thread_pool.h"
#include "graph/tensor_catalogue.h"
#include "model/nextn_tensors.h"
#include "model/synthetic_vocab.h"

namespace duet::model {
namespace {

struct DtypeChoice {
    const char* name;
    DType base;
    uint32_t file_type;  // llama.cpp's llama_ftype for general.file_type
};
constexpr DtypeChoice kDtypes[] = {
    {"f32", DType::F32, 0},   {"f16", DType::F16, 1},   {"bf16", DType::BF16, 32}, {"q8_0", DType::Q8_0, 7},
    {"q4_0", DType::Q4_0, 2}, {"q5_0", DType::Q5_0, 8}, {"q4_k", DType::Q4_K, 15}, {"q6_k", DType::Q6_K, 18},
};

const DtypeChoice& dtype_choice(const std::string& name) {
    for (const auto& d : kDtypes)
        if (name == d.name) return d;
    fail("unknown --dtype '{}' (allowed: {})", name, synthetic_dtype_names());
}

// A type whose block divides the row, walking the fallback chain K-quant -> Q8_0 -> F16.
DType fit(DType want, int64_t row) {
    for (DType t : {want, DType::Q8_0, DType::F16})
        if (row % dtype_info(t).block_elems == 0) return t;
    return DType::F32;
}

uint64_t splitmix64(uint64_t& s) {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string& s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    return h;
}

// Sum of four 16-bit uniforms, centred and scaled to unit variance (support +-3.46).
inline float approx_normal(uint64_t r) {
    const float s = float(r & 0xffff) + float((r >> 16) & 0xffff) + float((r >> 32) & 0xffff) + float(r >> 48);
    return (s * (1.0f / 65536.0f) - 2.0f) * 1.7320508f;
}
// Uniform in [-1, 1).
inline float uniform_pm1(uint64_t r) { return float(r >> 40) * (2.0f / 16777216.0f) - 1.0f; }

// Llama-3.1 rope scaling factors (the divisors llama.cpp's converter stores in rope_freqs).
float llama31_rope_factor(const Hparams& hp, int64_t i) {
    const double factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0, old_ctx = 8192.0;
    const double low_freq_wavelen = old_ctx / low_freq_factor, high_freq_wavelen = old_ctx / high_freq_factor;
    const double freq = 1.0 / std::pow(double(hp.rope_freq_base), double(2 * i) / double(hp.n_rot));
    const double wavelen = 2.0 * M_PI / freq;
    if (wavelen < high_freq_wavelen) return 1.0f;
    if (wavelen > low_freq_wavelen) return float(factor);
    const double smooth = (old_ctx / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
    return float(1.0 / ((1.0 - smooth) / factor + smooth));
}

// llama.cpp's Q4_K_M rule for which layers get more bits in attn_v and ffn_down.
bool use_more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

}  // namespace

std::string synthetic_dtype_names() {
    std::string s;
    for (const auto& d : kDtypes) s += (s.empty() ? "" : ", ") + std::string(d.name);
    return s;
}

std::vector<SyntheticTensor> synthetic_tensor_plan(const Hparams& hp, const std::string& dtype) {
    const DtypeChoice& choice = dtype_choice(dtype);
    const bool q4k_mix = choice.base == DType::Q4_K;
    using K = SyntheticTensor::Kind;
    using graph::WeightKind;
    const graph::ModelShape s = model_shape(hp);
    const float embd_scale = 2.0f / std::sqrt(float(hp.n_embd));
    const float out_proj = 1.0f / std::sqrt(2.0f * float(hp.n_layer));
    std::vector<SyntheticTensor> plan;
    // One tensor of the catalogue (graph/tensor_catalogue.h) in block `layer`.
    const auto add = [&](const graph::TensorSpec& t, int64_t layer) {
        const std::string name = graph::gguf_name(t, layer);
        const int64_t cols = graph::spec_cols(t, s);
        if (t.kind == WeightKind::VECTOR) {
            const K kind = t.part == graph::Part::BIAS                ? K::BIAS
                           : t.role == graph::WeightRole::ROPE_FREQS ? K::ROPE_FREQS
                                                                     : K::NORM;
            plan.push_back({name, DType::F32, {cols}, kind, kind == K::ROPE_FREQS ? 0.0f : 0.1f});
            return;
        }
        if (t.keep_f32 && t.rows == graph::Dim::ONE) {  // a one-row matrix stored as llama.cpp does: 1-D F32
            plan.push_back({name, DType::F32, {cols}, K::WEIGHT, 1.0f / std::sqrt(float(cols)), true});
            return;
        }
        DType want = t.keep_f32 ? DType::F32 : choice.base;
        if (q4k_mix && t.q4km == graph::Q4kmMix::Q6_K) want = DType::Q6_K;
        if (q4k_mix && t.q4km == graph::Q4kmMix::MORE_BITS_LAYERS && use_more_bits(layer, hp.n_layer))
            want = DType::Q6_K;
        // the table, and the lm-head that may stand in for it, give logits a spread of ~2
        const bool embedding = t.kind == WeightKind::TABLE || t.falls_back_to != graph::WeightRole::NONE;
        const float scale = embedding ? embd_scale : (t.residual ? out_proj : 1.0f) / std::sqrt(float(cols));
        std::vector<int64_t> shape = {cols, graph::spec_rows(t, s)};
        if (t.stack != graph::Dim::ONE) shape.push_back(graph::dim_value(t.stack, s));  // a stack of experts
        plan.push_back({name, fit(want, cols), shape, embedding ? K::EMBEDDING : K::WEIGHT, scale, t.keep_f32});
    };
    const auto scope = [&](graph::Binding b, int64_t layer) {
        for (const graph::TensorSpec& t : graph::tensor_catalogue())
            if (t.binding == b && graph::present(t, s, layer)) add(t, layer);
    };
    // File order: what the blocks read first, the blocks, then the head.
    scope(graph::Binding::INPUT, -1);
    scope(graph::Binding::SHARED, -1);
    for (int64_t l = 0; l < hp.n_layer; ++l) scope(graph::Binding::BLOCK, l);
    // The multi-token-prediction blocks (model/nextn_tensors.h): a block's rows and its own tensors.
    for (int64_t l = hp.n_layer; l < hp.n_layer + hp.n_layer_nextn; ++l) {
        scope(graph::Binding::BLOCK, l);
        for (const NextnTensorSpec& t : kNextnTensors) {
            const int64_t cols = nextn_cols(t, hp), rows = nextn_rows(t, hp);
            if (rows == 0) {
                plan.push_back({nextn_name(t, l), DType::F32, {cols}, K::NORM, 0.1f});
            } else {
                const bool table = t.shape == NextnShape::VOCAB_TABLE;
                const float scale = table ? embd_scale : 1.0f / std::sqrt(float(cols));
                const K kind = table ? K::EMBEDDING : K::WEIGHT;
                plan.push_back({nextn_name(t, l), fit(choice.base, cols), {cols, rows}, kind, scale});
            }
        }
    }
    scope(graph::Binding::OUTPUT, -1);
    return plan;
}

void synthetic_row(const SyntheticTensor& t, const Hparams& hp, uint64_t seed, int64_t row, float* out) {
    const int64_t n = t.shape[0];
    using K = SyntheticTensor::Kind;
    if (t.kind == K::ROPE_FREQS) {
        for (int64_t i = 0; i < n; ++i) out[i] = llama31_rope_factor(hp, i);
        return;
    }
    uint64_t s = seed;
    s = splitmix64(s) ^ fnv1a(t.name);
    s = splitmix64(s) ^ uint64_t(row) * 0xd1b54a32d192ed03ull;
    switch (t.kind) {
        case K::WEIGHT:
        case K::EMBEDDING:
            for (int64_t i = 0; i < n; ++i) out[i] = t.scale * approx_normal(splitmix64(s));
            break;
        case K::NORM:
            for (int64_t i = 0; i < n; ++i) out[i] = 1.0f + t.scale * uniform_pm1(splitmix64(s));
            break;
        case K::BIAS:
            for (int64_t i = 0; i < n; ++i) out[i] = t.scale * uniform_pm1(splitmix64(s));
            break;
        case K::ROPE_FREQS:
            break;
    }
}

SyntheticSummary write_synthetic_model(const std::string& path, const ArchPreset& preset, const SyntheticOptions& opt,
                                       const format::GgufWriter::Progress& progress) {
    const DtypeChoice& choice = dtype_choice(opt.dtype);
    SyntheticSummary sum;
    Hparams hp = preset.hparams;
    if (opt.n_layer != 0) {
        if (opt.n_layer < 1 || opt.n_layer > 4096) fail("--layers {} is out of range (allowed: 1..4096)", opt.n_layer);
        hp.n_layer = opt.n_layer;
    }
    hp.validate("architecture preset " + preset.name);
    sum.hparams = hp;
    sum.n_params = hp.n_params();

    format::GgufWriter w(path);
    write_hparams(w, hp);
    w.set_string("general.name", "duet synthetic " + preset.name);
    w.set_u32("general.file_type", choice.file_type);
    if (dtype_is_quantized(choice.base)) w.set_u32("general.quantization_version", 2);
    w.set_string("duet.synthetic.preset", preset.name);
    w.set_u64("duet.synthetic.seed", opt.seed);
    write_vocab(w, build_synthetic_vocab(preset));

    auto pool = std::make_shared<ThreadPool>(opt.n_threads);
    const auto plan = std::make_shared<std::vector<SyntheticTensor>>(synthetic_tensor_plan(hp, opt.dtype));
    for (size_t ti = 0; ti < plan->size(); ++ti) {
        const SyntheticTensor& t = (*plan)[ti];
        const bool intended =
            t.dtype == choice.base || t.shape.size() == 1 || t.keep_f32 || (choice.base == DType::Q4_K && t.dtype == DType::Q6_K);
        if (!intended) ++sum.n_fallback_tensors;
        const uint64_t seed = opt.seed;
        w.add_tensor(t.name, t.dtype, t.shape, [pool, plan, ti, hp, seed](int64_t r0, int64_t nr, uint8_t* dst) {
            const SyntheticTensor& tt = (*plan)[ti];
            const int64_t n = tt.shape[0];
            const size_t rb = row_bytes(tt.dtype, n);
            pool->parallel_for(nr, 16, [&](int64_t a, int64_t b) {
                std::vector<float> row(static_cast<size_t>(n));
                for (int64_t r = a; r < b; ++r) {
                    synthetic_row(tt, hp, seed, r0 + r, row.data());
                    quant::quantize_row(row.data(), tt.dtype, dst + size_t(r) * rb, n);
                }
            });
        });
    }
    w.write(progress);
    sum.file_bytes = std::filesystem::file_size(path);
    return sum;
}

}  // namespace duet::model
