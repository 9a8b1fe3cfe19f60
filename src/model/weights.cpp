#include "model/weights.h"

#include <fmt/format.h>


#include "core/error.h"
#include "format/gguf.h"

namespace duet::model {
namespace {

std::string shape_string(const std::vector<int64_t>& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
}

bool is_matmul_type(DType t) {
    switch (t) {
        case DType::F32: case DType::F16: case DType::BF16: case DType::Q8_0:
        case DType::Q4_0: case DType::Q5_0: case DType::Q4_K: case DType::Q6_K: return true;
        default: return false;
    }
}

class Binder {
public:
    Binder(const format::GgufFile& f) : f_(f) {}

    // ne0 = cols (contiguous), ne1 = rows; rows == 0 means a vector of `cols` elements.
    TensorRef bind(const std::string& name, int64_t cols, int64_t rows, bool matmul) {
        const format::GgufTensorInfo* t = f_.find_tensor(name);
        if (!t) fail("{}: tensor '{}' is missing", f_.path(), name);
        std::vector<int64_t> s = t->shape;
        while (s.size() > 1 && s.back() == 1) s.pop_back();
        const std::vector<int64_t> want = rows ? std::vector<int64_t>{cols, rows} : std::vector<int64_t>{cols};
        if (s != want)
            fail("{}: tensor '{}' has shape {} but the hparams need {} (ggml order)", f_.path(), name,
                 shape_string(t->shape), shape_string(want));
        if (matmul ? !is_matmul_type(t->dtype) : t->dtype != DType::F32)
            fail("{}: tensor '{}' has dtype {} (allowed: {})", f_.path(), name, dtype_name(t->dtype),
                 matmul ? "f32, f16, bf16, q8_0, q4_0, q5_0, q4_k, q6_k" : "f32");
        TensorRef r;
        r.data = t->data;
        r.dtype = t->dtype;
        r.rows = rows ? rows : 1;
        r.cols = cols;
        r.row_stride_bytes = row_bytes(t->dtype, cols);
        r.name = name;
        return r;
    }

private:
    const format::GgufFile& f_;
};

}  // namespace

uint64_t Weights::total_bytes() const {
    uint64_t n = token_embd.n_bytes() + output_norm.n_bytes() + rope_freqs.n_bytes();
    if (output.data != token_embd.data) n += output.n_bytes();
    for (const auto& l : layers)
        for (const TensorRef* t : {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.wo, &l.bq, &l.bk, &l.bv, &l.ffn_norm,
                                   &l.ffn_gate, &l.ffn_up, &l.ffn_down})
            n += t->n_bytes();
    return n;
}

Weights bind_weights(const format::GgufFile& file, const Hparams& hp) {
    Binder b(file);
    Weights w;
    const int64_t n_q = hp.n_embd_q(), n_kv = hp.n_embd_kv();
    w.token_embd = b.bind("token_embd.weight", hp.n_embd, hp.n_vocab, true);
    w.output_norm = b.bind("output_norm.weight", hp.n_embd, 0, false);
    if (hp.tied_output) {
        w.output = w.token_embd;
    } else {
        w.output = b.bind("output.weight", hp.n_embd, hp.n_vocab, true);
    }
    if (hp.has_rope_freqs) w.rope_freqs = b.bind("rope_freqs.weight", hp.n_rot / 2, 0, false);
    w.layers.resize(size_t(hp.n_layer));
    for (int64_t i = 0; i < hp.n_layer; ++i) {
        const std::string p = fmt::format("blk.{}.", i);
        LayerWeights& l = w.layers[size_t(i)];
        l.attn_norm = b.bind(p + "attn_norm.weight", hp.n_embd, 0, false);
        l.wq = b.bind(p + "attn_q.weight", hp.n_embd, n_q, true);
        l.wk = b.bind(p + "attn_k.weight", hp.n_embd, n_kv, true);
        l.wv = b.bind(p + "attn_v.weight", hp.n_embd, n_kv, true);
        l.wo = b.bind(p + "attn_output.weight", n_q, hp.n_embd, true);
        if (hp.qkv_bias) {
            l.bq = b.bind(p + "attn_q.bias", n_q, 0, false);
            l.bk = b.bind(p + "attn_k.bias", n_kv, 0, false);
            l.bv = b.bind(p + "attn_v.bias", n_kv, 0, false);
        }
        l.ffn_norm = b.bind(p + "ffn_norm.weight", hp.n_embd, 0, false);
        l.ffn_gate = b.bind(p + "ffn_gate.weight", hp.n_embd, hp.n_ff, true);
        l.ffn_up = b.bind(p + "ffn_up.weight", hp.n_embd, hp.n_ff, true);
        l.ffn_down = b.bind(p + "ffn_down.weight", hp.n_ff, hp.n_embd, true);
    }
    return w;
}

}  // namespace duet::model
