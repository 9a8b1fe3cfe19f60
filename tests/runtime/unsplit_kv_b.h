#pragma once
// Test helper: a deepseek2 file with W_kv_b unsplit (older llama.cpp conversions), made from
// the generated f32 tiny-deepseek2 (runtime/engine_mla.cpp splits it at load).
#include <string>
#include <vector>

#include "format/gguf.h"
#include "format/gguf_writer.h"

namespace duet::test {

// The f32 tiny-deepseek2 with blk.N.attn_k_b / attn_v_b replaced by the one attn_kv_b
// [n_head * (qk_nope + v_head)][kv_lora_rank] they are the halves of (attn_k_b transposed back),
// written beside it as <split>.<tag>.gguf (a tag per test binary: ctest runs them at once).
inline std::string with_unsplit_kv_b(const std::string& split, const std::string& tag = "kv_b") {
    const auto f = format::GgufFile::open(split);
    const int64_t H = 4, C = 64, N = 32, V = 32;
    const std::string out = split + "." + tag + ".gguf";
    format::GgufWriter w(out);
    for (const auto& [k, v] : f.metadata()) w.set_value(k, v);
    for (const format::GgufTensorInfo& t : f.tensors()) {
        const auto* x = reinterpret_cast<const float*>(t.data);
        if (t.name.ends_with("attn_v_b.weight")) continue;
        if (!t.name.ends_with("attn_k_b.weight")) {
            w.add_tensor_f32(t.name, t.dtype, t.shape, std::vector<float>(x, x + t.n_elements()));
            continue;
        }
        const std::string layer = t.name.substr(0, t.name.size() - std::string("attn_k_b.weight").size());
        const auto* vb = reinterpret_cast<const float*>(f.tensor(layer + "attn_v_b.weight").data);
        std::vector<float> kv_b(size_t(H * (N + V) * C));
        for (int64_t h = 0; h < H; ++h)
            for (int64_t c = 0; c < C; ++c) {
                for (int64_t n = 0; n < N; ++n) kv_b[size_t((h * (N + V) + n) * C + c)] = x[(h * C + c) * N + n];
                for (int64_t v = 0; v < V; ++v) kv_b[size_t((h * (N + V) + N + v) * C + c)] = vb[(h * V + v) * C + c];
            }
        w.add_tensor_f32(layer + "attn_kv_b.weight", DType::F32, {C, H * (N + V)}, std::move(kv_b));
    }
    w.write();
    return out;
}

}  // namespace duet::test
