// Multi-head latent attention of the engine (graph/mla_builder.h has the data flow), absorbed in
// every phase as llama.cpp's deepseek2 graph runs it.
//
// The KV cache is a latent one (runtime/kv_cache.h, config `latent`): per position and layer one
// row [c | k_pe] of kv_lora_rank + qk_rope_head_dim values — the RMS-normed latent and the roped
// key shared by all heads — instead of K and V of every head. ROPE rotates the last
// qk_rope_head_dim values of every query head (llama.cpp's layout: head h is [nope | rope]) and
// k_pe, in adjacent pairs (deepseek2 is LLAMA_ROPE_TYPE_NORM). HEAD_MATMUL multiplies each head's
// slice by that head's matrix (W_UK^T: q_nope -> latent space; W_UV: latent -> value head), all
// heads in one WeightSource::matmul_stack (the PIM layout holds each head's matrix on its own).
// MLA_ATTENTION copies a sequence's cached rows of the layer to f32 once and runs
// kernels::mla_attention over them with scale 1/sqrt(qk_nope_head_dim + qk_rope_head_dim).
// A file with W_kv_b unsplit (older llama.cpp conversions) is split at load into f32 per-head
// matrices of the split tensors' shapes (the key half transposed), as llama.cpp's converter now
// writes them; HEAD_MATMUL reads that f32 copy in place (matmul_stack_plain) on every weight
// source: the copy is the engine's, not a matrix of the file the PIM layout is built from.
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "runtime/engine.h"

namespace duet::runtime {

using graph::WeightRole;

// YaRN as llama.cpp's deepseek2 graph applies it (its llama-context.cpp sets the rope's attention
// factor so that the rotation keeps unit magnitude when the file gives yarn_log_multiplier, else
// 1 + 0.1 ln f; deepseek2.cpp scales the scores by mscale^2, mscale = that magnitude x (1 + 0.1 x
// mscale_all_dim x ln f)).
void Engine::init_mla() {
    const model::Hparams& hp = model_->hparams();
    float mscale = 1.0f;
    if (hp.rope_yarn) {
        const float factor = 1.0f / hp.rope_freq_scale, ln_f = std::log(factor);
        const float magnitude = hp.rope_yarn_log_mul != 0.0f ? 1.0f : 1.0f + 0.1f * ln_f;
        mla_yarn_ = kernels::yarn_rope(hp.qk_rope_head_dim, hp.rope_freq_base, factor, hp.rope_yarn_orig_ctx,
                                       hp.rope_yarn_beta_fast, hp.rope_yarn_beta_slow, magnitude);
        mscale = magnitude * (1.0f + 0.1f * hp.rope_yarn_log_mul * ln_f);
    }
    mla_kq_scale_ = mscale * mscale / std::sqrt(float(hp.qk_nope_head_dim + hp.qk_rope_head_dim));
    if (hp.mla_kv_b) split_kv_b();
}

void Engine::split_kv_b() {
    const model::Hparams& hp = model_->hparams();
    // the graph's heads: under tensor parallelism the rank's, whose rows attn_kv_b's slice holds
    const int64_t H = graph_.shape.n_head, C = hp.kv_lora_rank, N = hp.qk_nope_head_dim, V = hp.v_head_dim;
    mla_split_.assign(size_t(hp.n_layer), {});
    std::vector<float> row(static_cast<size_t>(C));
    for (int32_t l = 0; l < int32_t(hp.n_layer); ++l) {
        const model::TensorRef& kv_b = plain_.tensor(WeightRole::ATTN_KV_B, l);  // [H * (N + V)][C]
        if (!kv_b.present()) continue;  // a pipeline stage holds its own layers only
        DUET_CHECK(kv_b.rows == H * (N + V), "engine: {} has {} rows for {} heads of {} + {}", kv_b.name, kv_b.rows, H,
                   N, V);
        MlaSplit& sp = mla_split_[size_t(l)];
        sp.k_b.resize(size_t(H * C * N));
        sp.v_b.resize(size_t(H * V * C));
        for (int64_t h = 0; h < H; ++h) {
            for (int64_t r = 0; r < N + V; ++r) {
                const auto* src =
                    static_cast<const uint8_t*>(kv_b.data) + size_t(h * (N + V) + r) * kv_b.row_stride_bytes;
                kernels::dequantize_row(src, kv_b.dtype, row.data(), C);
                for (int64_t c = 0; c < C; ++c) {
                    if (r < N)
                        sp.k_b[size_t((h * C + c) * N + r)] = row[size_t(c)];  // k_b[h]: [C][N]
                    else
                        sp.v_b[size_t((h * V + r - N) * C + c)] = row[size_t(c)];  // v_b[h]: [V][C]
                }
            }
        }
        const auto ref = [&](const std::vector<float>& d, int64_t rows, int64_t cols, const char* what) {
            model::TensorRef t;
            t.data = d.data();
            t.dtype = DType::F32;
            t.rows = rows;
            t.cols = cols;
            t.row_stride_bytes = size_t(cols) * sizeof(float);
            t.n_stack = H;
            t.name = kv_b.name + " (" + what + ")";
            return t;
        };
        sp.k_b_ref = ref(sp.k_b, C, N, "k_b");
        sp.v_b_ref = ref(sp.v_b, V, C, "v_b");
    }
}

const model::TensorRef& Engine::head_weights(WeightRole role, int32_t layer) const {
    if (mla_split_.empty()) return plain_.tensor(role, layer);
    const MlaSplit& sp = mla_split_[size_t(layer)];
    return role == WeightRole::ATTN_K_B ? sp.k_b_ref : sp.v_b_ref;
}

void Engine::mla_rope(const graph::Node& nd, const Step& st) {
    const graph::ModelShape& s = graph_.shape;
    const int64_t H = s.n_head, N = s.qk_nope_head_dim, R = s.qk_rope_head_dim;
    DUET_CHECK(ptr(nd.in[0]) == ptr(nd.out[0]) && ptr(nd.in[1]) == ptr(nd.out[1]),
               "engine: latent RoPE of layer {} is not in place", nd.layer);
    float* q = ptr(nd.out[0]);
    float* k = ptr(nd.out[1]);
    const int64_t qs = stride(nd.out[0]), ks = stride(nd.out[1]);
    const Dispatcher::RopeParams p = rope_params();
    const bool yarn = model_->hparams().rope_yarn;
    dispatch_.mla([&] {
        pool_.parallel_for(st.n_tok, 4, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) {
                if (yarn) {
                    kernels::rope_yarn(q + i * qs + N, H, N + R, R, pos_[size_t(i)], mla_yarn_);
                    kernels::rope_yarn(k + i * ks, 1, R, R, pos_[size_t(i)], mla_yarn_);
                    continue;
                }
                // head h's rope part starts N after it; heads are N + R apart
                kernels::rope(q + i * qs + N, H, N + R, R, pos_[size_t(i)], p.freq_base, p.freq_scale, nullptr,
                              p.order);
                kernels::rope(k + i * ks, 1, R, R, pos_[size_t(i)], p.freq_base, p.freq_scale, nullptr, p.order);
            }
        });
    });
}

void Engine::mla_write_kv(const graph::Node& nd, const Step& st) {
    KvCache& cache = *kv_;
    const int32_t il = nd.layer - kv_layer0_;
    const int64_t bt = cache.block_tokens(), C = graph_.shape.kv_lora_rank, R = graph_.shape.qk_rope_head_dim;
    const DType kv_type = cache.config().kv_type;
    const size_t rb = cache.row_bytes();
    const float *c = ptr(nd.in[0]), *k = ptr(nd.in[1]);
    const int64_t cs = stride(nd.in[0]), ks = stride(nd.in[1]);
    mla_row_.resize(size_t(C + R));
    dispatch_.kv_write([&] {
        int64_t t = 0;
        for (const SeqInput& in : st.batch) {
            const auto& blocks = in.kv->blocks();
            for (size_t i = 0; i < in.tokens.size(); ++i, ++t) {
                const int64_t p = pos_[size_t(t)];
                std::memcpy(mla_row_.data(), c + t * cs, size_t(C) * sizeof(float));
                std::memcpy(mla_row_.data() + C, k + t * ks, size_t(R) * sizeof(float));
                store_kv_row(mla_row_.data(), cache.k_block(il, blocks[size_t(p / bt)]) + size_t(p % bt) * rb, C + R,
                             kv_type);
            }
        }
    });
}

void Engine::head_matmul(const graph::Node& nd, const Step& st) {
    const int64_t H = graph_.shape.n_head, n = nd.n, k = nd.k;
    const int32_t xt = nd.in[0], yt = nd.out[0];
    const int64_t x_head = graph_.tensors[size_t(xt)].width / H;  // head h's k inputs start h * x_head in
    DUET_CHECK(x_head >= k && graph_.tensors[size_t(yt)].width == H * n, "engine: {} of layer {} has shapes {}/{}",
               graph::op_kind_name(nd.kind), nd.layer, graph_.tensors[size_t(xt)].width,
               graph_.tensors[size_t(yt)].width);
    const float* x = ptr(xt);
    float* y = ptr(yt);
    const int64_t xs = stride(xt), ys = stride(yt);
    // The file's k_b / v_b through the weight source (the PIM layout holds each head's matrix);
    // the engine's f32 split of an unsplit W_kv_b in place.
    const bool own_split = !mla_split_.empty();
    const WeightInfo wi = own_split ? WeightInfo{} : dispatch_.weight_source().info(nd.role, nd.layer);
    graph::OpRecord rec = graph::lower(graph_, nd, st.lowering);
    if (own_split) {
        const model::TensorRef& stack = head_weights(nd.role, nd.layer);
        rec.weight_dtype = stack.dtype;
        rec.weight_bytes = uint64_t(H) * uint64_t(n) * stack.row_stride_bytes;
    } else {
        rec.weight_dtype = wi.dtype;
        rec.weight_bytes = uint64_t(H) * uint64_t(n) * row_bytes(wi.dtype, k);
    }
    dispatch_.set_record(rec);
    head_groups_.resize(size_t(H));
    for (int64_t h = 0; h < H; ++h) head_groups_[size_t(h)] = StackRows{h, x + h * x_head, st.n_tok, xs, y + h * n, ys};
    dispatch_.mla([&] {
        if (own_split)
            matmul_stack_plain(head_weights(nd.role, nd.layer), head_groups_.data(), H, pool_);
        else
            dispatch_.weight_source().matmul_stack(nd.role, nd.layer, head_groups_.data(), H, pool_);
    });
}

void Engine::mla_attend(const graph::Node& nd, const Step& st) {
    const graph::ModelShape& s = graph_.shape;
    KvCache& cache = *kv_;
    const int32_t il = nd.layer - kv_layer0_;
    const int64_t H = s.n_head, C = s.kv_lora_rank, R = s.qk_rope_head_dim, N = s.qk_nope_head_dim;
    const int64_t row = C + R, bt = cache.block_tokens();
    const float scale = mla_kq_scale_;
    const DType kv_type = cache.config().kv_type;
    const size_t rb = cache.row_bytes();
    const float* q_lat = ptr(nd.in[0]);
    const float* q = ptr(nd.in[1]);  // the roped query: head h's rope part at h * (N + R) + N
    float* out = ptr(nd.out[0]);
    const int64_t ls = stride(nd.in[0]), qs = stride(nd.in[1]), os = stride(nd.out[0]);
    dispatch_.mla([&] {
        int64_t off = 0;
        for (const SeqInput& in : st.batch) {
            const int64_t n_q = int64_t(in.tokens.size()), pos0 = in.kv->n_tokens(), n_ctx = pos0 + n_q;
            mla_ctx_.resize(size_t(n_ctx * row));
            for (int64_t u = 0; u < n_ctx; ++u)
                kernels::dequantize_row(cache.k_block(il, in.kv->blocks()[size_t(u / bt)]) + size_t(u % bt) * rb,
                                        kv_type, mla_ctx_.data() + u * row, row);
            const kernels::MlaQuery mq{q_lat + off * ls, ls, q + off * qs + N, qs, N + R, H, C, R};
            kernels::mla_attention(mq, n_q, pos0, mla_ctx_.data(), scale, out + off * os, os, pool_);
            off += n_q;
        }
    });
}

}  // namespace duet::runtime
