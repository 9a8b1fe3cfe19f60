#include "runtime/engine.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"

namespace duet::runtime {

using sim::WeightRole;

namespace {

EngineOptions resolve(const model::Hparams& hp, EngineOptions o) {
    if (o.n_ctx < 0) fail("--ctx {} is out of range (allowed: 0 = default, or a positive number)", o.n_ctx);
    if (o.n_ctx == 0) o.n_ctx = std::min<int64_t>(hp.n_ctx_train > 0 ? hp.n_ctx_train : 4096, 4096);
    if (o.n_seq_max < 1) fail("engine: n_seq_max {} is out of range (allowed: >= 1)", o.n_seq_max);
    if (o.block_tokens < 1 || o.block_tokens > 4096)
        fail("engine: block_tokens {} is out of range (allowed: 1..4096)", o.block_tokens);
    if (o.kv_blocks <= 0) o.kv_blocks = KvCache::blocks_for(o.n_ctx, o.n_seq_max, o.block_tokens);
    if (o.n_threads <= 0) o.n_threads = default_thread_count();
    return o;
}

// Stores one row of n floats in the KV cache's type.
void store_row(const float* src, uint8_t* dst, int64_t n, DType type) {
    if (type == DType::F32) {
        std::memcpy(dst, src, size_t(n) * sizeof(float));
    } else {
        auto* h = reinterpret_cast<uint16_t*>(dst);
        for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(src[i]);
    }
}

}  // namespace

Engine::Engine(std::shared_ptr<const Model> model, const EngineOptions& opts)
    : model_(std::move(model)),
      opts_(resolve(model_->hparams(), opts)),
      pool_(opts_.n_threads),
      plain_(model_->weights()),
      dispatch_(pool_, &plain_),
      rope_order_(model_->hparams().rope_neox ? kernels::RopeOrder::NEOX : kernels::RopeOrder::NORM) {
    const model::Hparams& hp = model_->hparams();
    KvCacheConfig kc;
    kc.n_layer = hp.n_layer;
    kc.n_head_kv = hp.n_head_kv;
    kc.head_dim = hp.head_dim;
    kc.block_tokens = opts_.block_tokens;
    kc.n_blocks = opts_.kv_blocks;
    kc.kv_type = opts_.kv_type;
    kv_ = std::make_unique<KvCache>(kc);
}

Engine::~Engine() = default;

void Engine::ensure_scratch(int64_t n) {
    if (n <= scratch_tokens_) return;
    const model::Hparams& hp = model_->hparams();
    const auto sz = [n](int64_t w) { return size_t(n * w); };
    x_.resize(sz(hp.n_embd));
    xn_.resize(sz(hp.n_embd));
    q_.resize(sz(hp.n_embd_q()));
    k_.resize(sz(hp.n_embd_kv()));
    v_.resize(sz(hp.n_embd_kv()));
    attn_.resize(sz(hp.n_embd_q()));
    gate_.resize(sz(hp.n_ff));
    up_.resize(sz(hp.n_ff));
    pos_.resize(size_t(n));
    scratch_tokens_ = n;
}

ForwardStatus Engine::forward(std::span<const SeqInput> batch, ForwardOutput& out) {
    const model::Hparams& hp = model_->hparams();
    if (batch.empty()) fail("forward: empty batch");
    int64_t n_tok = 0, n_rows = 0;
    bool any_prefill = false;
    for (size_t s = 0; s < batch.size(); ++s) {
        const SeqInput& in = batch[s];
        DUET_CHECK(in.kv != nullptr, "forward: sequence {} has no block table", s);
        for (size_t t = 0; t < s; ++t) DUET_CHECK(batch[t].kv != in.kv, "forward: one sequence twice in a batch");
        if (in.tokens.empty()) fail("forward: sequence {} has no new tokens", s);
        for (int32_t id : in.tokens)
            if (id < 0 || id >= hp.n_vocab)
                fail("forward: token id {} is out of range (allowed: 0..{})", id, hp.n_vocab - 1);
        if (in.kv->n_tokens() + int64_t(in.tokens.size()) > opts_.n_ctx) return ForwardStatus::CTX_EXCEEDED;
        n_tok += int64_t(in.tokens.size());
        n_rows += in.all_logits ? int64_t(in.tokens.size()) : 1;
        any_prefill = any_prefill || in.tokens.size() > 1;
    }
    // All or nothing: on failure give back what this call reserved.
    for (size_t s = 0; s < batch.size(); ++s) {
        if (!batch[s].kv->reserve(*kv_, int64_t(batch[s].tokens.size()))) {
            for (size_t t = 0; t <= s; ++t) batch[t].kv->truncate(*kv_, batch[t].kv->n_tokens());
            return ForwardStatus::KV_FULL;
        }
    }

    ensure_scratch(n_tok);
    std::vector<int32_t> tokens;
    tokens.reserve(size_t(n_tok));
    for (const SeqInput& in : batch) {
        for (size_t i = 0; i < in.tokens.size(); ++i) {
            pos_[tokens.size()] = in.kv->n_tokens() + int64_t(i);
            tokens.push_back(in.tokens[i]);
        }
    }

    dispatch_.set_context(any_prefill ? sim::Phase::PREFILL : sim::Phase::DECODE, -1, int32_t(batch.size()));
    const model::Weights& w = model_->weights();
    dispatch_.embed(tokens.data(), n_tok, w.token_embd.data, w.token_embd.dtype, w.token_embd.row_stride_bytes,
                    hp.n_embd, x_.data());
    for (int32_t il = 0; il < int32_t(hp.n_layer); ++il) layer_forward(il, n_tok, batch);
    dispatch_.set_layer(-1);

    // Gather the rows whose logits are wanted, then final norm + LM head on those rows only.
    out.n_vocab = hp.n_vocab;
    out.row_begin.assign(batch.size(), 0);
    int64_t src = 0, dst = 0;
    for (size_t s = 0; s < batch.size(); ++s) {
        const int64_t n = int64_t(batch[s].tokens.size());
        const int64_t keep = batch[s].all_logits ? n : 1;
        out.row_begin[s] = dst;
        for (int64_t i = n - keep; i < n; ++i, ++dst)
            std::memcpy(&xn_[size_t(dst * hp.n_embd)], &x_[size_t((src + i) * hp.n_embd)], size_t(hp.n_embd) * 4);
        src += n;
    }
    dispatch_.rmsnorm(xn_.data(), w.output_norm.f32(), xn_.data(), n_rows, hp.n_embd, hp.norm_eps);
    out.logits.resize(size_t(n_rows * hp.n_vocab));
    dispatch_.matmul(WeightRole::LM_HEAD, xn_.data(), n_rows, out.logits.data());
    dispatch_.output(int64_t(batch.size()), hp.n_vocab);

    for (const SeqInput& in : batch) in.kv->commit(int64_t(in.tokens.size()));
    return ForwardStatus::OK;
}

void Engine::layer_forward(int32_t il, int64_t n_tok, std::span<const SeqInput> batch) {
    const model::Hparams& hp = model_->hparams();
    const model::LayerWeights& lw = model_->weights().layers[size_t(il)];
    const int64_t n_embd = hp.n_embd, n_q = hp.n_embd_q(), n_kv = hp.n_embd_kv();
    dispatch_.set_layer(il);

    dispatch_.rmsnorm(x_.data(), lw.attn_norm.f32(), xn_.data(), n_tok, n_embd, hp.norm_eps);
    const bool bias = hp.qkv_bias;
    dispatch_.matmul(WeightRole::ATTN_Q, xn_.data(), n_tok, q_.data(), bias ? lw.bq.f32() : nullptr);
    dispatch_.matmul(WeightRole::ATTN_K, xn_.data(), n_tok, k_.data(), bias ? lw.bk.f32() : nullptr);
    dispatch_.matmul(WeightRole::ATTN_V, xn_.data(), n_tok, v_.data(), bias ? lw.bv.f32() : nullptr);
    const float* factors = model_->weights().rope_freqs.present() ? model_->weights().rope_freqs.f32() : nullptr;
    const Dispatcher::RopeParams rp{hp.n_head,       hp.n_head_kv,        hp.head_dim, hp.n_rot,
                                    hp.rope_freq_base, hp.rope_freq_scale, factors,     rope_order_};
    dispatch_.rope(q_.data(), k_.data(), n_tok, pos_.data(), rp);

    KvCache& cache = *kv_;
    const int64_t bt = cache.block_tokens();
    const DType kv_type = cache.config().kv_type;
    const size_t rb = cache.row_bytes();
    dispatch_.kv_write(n_tok, n_kv, kv_type, [&] {
        int64_t t = 0;
        for (const SeqInput& in : batch) {
            const auto& blocks = in.kv->blocks();
            for (size_t i = 0; i < in.tokens.size(); ++i, ++t) {
                const int64_t p = pos_[size_t(t)];
                const BlockId b = blocks[size_t(p / bt)];
                store_row(&k_[size_t(t * n_kv)], cache.k_block(il, b) + size_t(p % bt) * rb, n_kv, kv_type);
                store_row(&v_[size_t(t * n_kv)], cache.v_block(il, b) + size_t(p % bt) * rb, n_kv, kv_type);
            }
        }
    });

    const float scale = 1.0f / std::sqrt(float(hp.head_dim));
    // Block pointers of every sequence for this layer, one array for the whole batch.
    size_t n_ptr = 0;
    for (const SeqInput& in : batch) n_ptr += in.kv->blocks().size();
    kptr_.resize(n_ptr);
    vptr_.resize(n_ptr);
    attn_seqs_.clear();
    int64_t off = 0;
    size_t p = 0;
    for (const SeqInput& in : batch) {
        const size_t first = p;
        for (BlockId b : in.kv->blocks()) {
            kptr_[p] = cache.k_block(il, b);
            vptr_[p++] = cache.v_block(il, b);
        }
        const int64_t n = int64_t(in.tokens.size());
        attn_seqs_.push_back({&q_[size_t(off * n_q)], n, in.kv->n_tokens(),
                              kernels::KvView{&kptr_[first], &vptr_[first], bt, kv_type}, &attn_[size_t(off * n_q)]});
        off += n;
    }
    dispatch_.attention(attn_seqs_, hp.n_head, hp.n_head_kv, hp.head_dim, scale);

    dispatch_.matmul(WeightRole::ATTN_OUT, attn_.data(), n_tok, xn_.data());
    dispatch_.add(x_.data(), xn_.data(), n_tok, n_embd);

    dispatch_.rmsnorm(x_.data(), lw.ffn_norm.f32(), xn_.data(), n_tok, n_embd, hp.norm_eps);
    dispatch_.matmul(WeightRole::FFN_GATE, xn_.data(), n_tok, gate_.data());
    dispatch_.matmul(WeightRole::FFN_UP, xn_.data(), n_tok, up_.data());
    dispatch_.swiglu(gate_.data(), up_.data(), gate_.data(), n_tok, hp.n_ff);
    dispatch_.matmul(WeightRole::FFN_DOWN, gate_.data(), n_tok, xn_.data());
    dispatch_.add(x_.data(), xn_.data(), n_tok, n_embd);
}

}  // namespace duet::runtime
