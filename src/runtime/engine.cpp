#include "runtime/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/quant.h"
#include "graph/fuse_matmuls.h"
#include "model/hparams.h"

namespace duet::runtime {

using graph::WeightRole;

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

// The family's graph of the model's shape.
graph::Graph default_graph(const model::Hparams& hp, const model::Weights& w) {
    return graph::build_graph(model::model_shape(hp, w.matrix_dtype(), DType::F16));
}

// Node dtypes from the file's tensors (a file may mix them: K-quant fallbacks), before any
// pass, so fusion only joins matrices of one dtype (a graph fused by the caller keeps its
// fused nodes' dtypes: they are bound after this); the KV nodes' from the cache, so their
// records (graph::lower) carry the KV element the engine stores.
graph::Graph with_file_dtypes(graph::Graph g, const PlainWeightSource& w, DType kv_type) {
    for (graph::Node& n : g.nodes) {
        if ((n.kind == graph::OpKind::MATMUL || n.kind == graph::OpKind::EMBED || n.kind == graph::OpKind::MOE_MATMUL ||
             n.kind == graph::OpKind::HEAD_MATMUL) &&
            graph::fused_parts(n.role).empty() && w.tensor(n.role, n.layer).present())
            n.dtype = w.tensor(n.role, n.layer).dtype;
        if (n.kind == graph::OpKind::KV_WRITE || n.kind == graph::OpKind::ROPE_KV_WRITE ||
            n.kind == graph::OpKind::ATTENTION || n.kind == graph::OpKind::MLA_ATTENTION)
            n.dtype = kv_type;
    }
    return g;
}

}  // namespace

void Engine::store_kv_row(const float* src, uint8_t* dst, int64_t n, DType type) {
    if (type == DType::F32) {
        std::memcpy(dst, src, size_t(n) * sizeof(float));
    } else if (type == DType::Q8_0) {  // int8 KV: per 32-value block an f16 scale (amax / 127)
        quant::quantize_row(src, DType::Q8_0, dst, n);
    } else {
        auto* h = reinterpret_cast<uint16_t*>(dst);
        for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(src[i]);
    }
}

Engine::Engine(std::shared_ptr<const Model> model, const EngineOptions& opts)
    : Engine(model, opts, default_graph(model->hparams(), model->weights())) {}

Engine::Engine(std::shared_ptr<const Model> model, const EngineOptions& opts, graph::Graph g)
    : Engine(model, opts, std::move(g), model->weights()) {}

Engine::Engine(std::shared_ptr<const Model> model, const EngineOptions& opts, graph::Graph g,
               const model::Weights& weights)
    : model_(std::move(model)),
      opts_(resolve(model_->hparams(), opts)),
      pool_(opts_.n_threads),
      plain_(weights),
      graph_(with_file_dtypes(std::move(g), plain_, opts_.kv_type)),
      dispatch_(pool_, &plain_),
      rope_order_(model_->hparams().rope_neox ? kernels::RopeOrder::NEOX : kernels::RopeOrder::NORM) {
    const model::Hparams& hp = model_->hparams();
    KvCacheConfig kc;
    kc.n_layer = graph_.pp.pp > 1 ? graph_.pp.layers.count : hp.n_layer;  // a pipeline stage: its layers only
    kv_layer0_ = graph_.pp.pp > 1 ? int32_t(graph_.pp.layers.begin) : 0;
    kc.n_head_kv = graph_.shape.n_head_kv;  // this rank's KV heads under tensor parallelism
    kc.head_dim = hp.head_dim;
    if (hp.is_mla()) {  // one latent row per position and layer: [c | k_pe]
        kc.n_head_kv = 1;
        kc.head_dim = hp.kv_lora_rank + hp.qk_rope_head_dim;
        kc.latent = true;
    }
    kc.block_tokens = opts_.block_tokens;
    kc.n_blocks = opts_.kv_blocks;
    kc.kv_type = opts_.kv_type;
    kv_ = std::make_unique<KvCache>(kc);
    if (hp.is_mla()) init_mla();
    if (opts_.fuse) graph_ = graph::fuse_all(graph_);
    plain_.bind_fused(graph_);
    mem_ = opts_.static_plan ? graph::plan_memory(graph_) : graph::plan_memory_without_reuse(graph_);
    dispatch_.set_reference_attention(opts_.reference_attention);
    if (opts_.prefetch_mlp_bytes > 0) prefetch_ = std::make_unique<MlpPrefetch>(graph_, plain_, opts_.prefetch_mlp_bytes);
    // Bind each node's vector operand once; check the contiguity the kernels need.
    node_vec_.assign(graph_.nodes.size(), nullptr);
    node_norm_.assign(graph_.nodes.size(), nullptr);
    for (size_t i = 0; i < graph_.nodes.size(); ++i) {
        const graph::Node& n = graph_.nodes[i];
        if (n.kind == graph::OpKind::RMSNORM) node_vec_[i] = plain_.tensor(n.role, n.layer).f32();
        if (n.kind == graph::OpKind::MATMUL && n.bias) node_vec_[i] = plain_.bias(n.role, n.layer);
        if (n.kind == graph::OpKind::MATMUL && n.norm != graph::WeightRole::NONE)
            node_norm_[i] = plain_.tensor(n.norm, n.layer).f32();
        const bool strided_ok = n.kind == graph::OpKind::ROPE || n.kind == graph::OpKind::KV_WRITE ||
                                n.kind == graph::OpKind::RMSNORM ||
                                n.kind == graph::OpKind::ROPE_KV_WRITE ||
                                n.kind == graph::OpKind::SWIGLU || n.kind == graph::OpKind::MATMUL;
        for (int32_t t : n.in)
            DUET_CHECK(strided_ok || graph_.contiguous(t), "engine: {} cannot read the strided tensor '{}'",
                       graph::op_kind_name(n.kind), graph_.tensors[size_t(t)].name);
        for (int32_t t : n.out)
            DUET_CHECK(n.kind == graph::OpKind::MATMUL || graph_.contiguous(t) ||
                           (n.kind == graph::OpKind::ROPE && graph_.shape.is_mla()),  // k_pe, in place in kv_a
                       "engine: {} cannot write the strided tensor '{}'", graph::op_kind_name(n.kind),
                       graph_.tensors[size_t(t)].name);
    }
}

Engine::~Engine() = default;

void Engine::set_weight_source(const WeightSource* w) { dispatch_.set_weight_source(w ? w : &plain_); }

void Engine::ensure_scratch(int64_t n) {
    if (n <= scratch_tokens_) return;
    arena_.assign(size_t(mem_.arena_width * n), 0.0f);
    ptr_.assign(graph_.tensors.size(), nullptr);
    for (size_t t = 0; t < graph_.tensors.size(); ++t) {
        const graph::Tensor& ten = graph_.tensors[t];
        const size_t root = size_t(graph_.root(int32_t(t)));
        if (ten.kind != graph::TensorKind::ACTIVATION) continue;  // set per forward
        ptr_[t] = arena_.data() + size_t(mem_.offset[root] * n) + size_t(ten.col0);
    }
    pos_.resize(size_t(n));
    tokens_.reserve(size_t(n));
    scratch_tokens_ = n;
}

ForwardStatus Engine::forward(std::span<const SeqInput> batch, ForwardOutput& out) {
    const auto t0 = std::chrono::steady_clock::now();
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
    tokens_.clear();
    for (const SeqInput& in : batch) {
        for (size_t i = 0; i < in.tokens.size(); ++i) {
            pos_[tokens_.size()] = in.kv->n_tokens() + int64_t(i);
            tokens_.push_back(in.tokens[i]);
        }
    }
    out.n_vocab = hp.n_vocab;
    out.row_begin.assign(batch.size(), 0);
    for (size_t s = 0, dst = 0; s < batch.size(); ++s) {
        out.row_begin[s] = int64_t(dst);
        dst += batch[s].all_logits ? batch[s].tokens.size() : 1;
    }
    out.logits.resize(size_t(n_rows * hp.n_vocab));
    ptr_[size_t(graph_.logits)] = out.logits.data();

    if (tp_) tp_->begin_step(batch);
    seq_spans_.clear();
    for (const SeqInput& in : batch) seq_spans_.push_back({in.kv->n_tokens(), int64_t(in.tokens.size())});
    const Step st{batch, tokens_.data(), n_tok, n_rows,
                  graph::Batch{seq_spans_, n_tok, n_rows, any_prefill ? graph::Phase::PREFILL : graph::Phase::DECODE}};
    for (const graph::Node& node : graph_.nodes) run_node(node, st);
    if (tp_) tp_->end_step(out);

    for (const SeqInput& in : batch) in.kv->commit(int64_t(in.tokens.size()));
    if (opts_.on_forward)
        opts_.on_forward({n_forwards_, any_prefill, n_tok, int64_t(batch.size()),
                          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count()});
    ++n_forwards_;
    return ForwardStatus::OK;
}

void Engine::run_node(const graph::Node& nd, const Step& st) {
    using graph::OpKind;
    const model::Hparams& hp = model_->hparams();
    const auto rows = [&](int32_t t) {
        return graph_.tensors[size_t(t)].rows == graph::Rows::TOKENS ? st.n_tok : st.n_rows;
    };
    const size_t node_index = size_t(&nd - graph_.nodes.data());
    const float* vec = node_vec_[node_index];
    dispatch_.set_record(graph::lower(graph_, nd, st.lowering));
    switch (nd.kind) {
        case OpKind::EMBED: {
            const model::TensorRef& t = plain_.tensor(nd.role, nd.layer);
            dispatch_.embed(st.tokens, st.n_tok, t.data, t.dtype, t.row_stride_bytes, nd.n, ptr(nd.out[0]));
            break;
        }
        case OpKind::RMSNORM: {
            const int32_t x = nd.in[0], y = nd.out[0];
            const float* xr = ptr(x);
            if (rows(x) == rows(y) && stride(x) != nd.n) {
                // a column view (MLA's latent; q or k of a fused Q|K|V): to y, then in place
                DUET_CHECK(stride(y) == nd.n, "engine: norm of layer {} writes a strided tensor", nd.layer);
                for (int64_t i = 0; i < rows(y); ++i)
                    std::memcpy(ptr(y) + i * nd.n, ptr(x) + i * stride(x), size_t(nd.n) * sizeof(float));
                xr = ptr(y);
            }
            if (nd.k > 0) {  // per head (Qwen3's q/k norms): rows of head_dim
                DUET_CHECK(rows(x) == rows(y) && stride(y) == nd.n, "engine: head norm of layer {} is strided",
                           nd.layer);
                dispatch_.rmsnorm(xr, vec, ptr(y), rows(y) * (nd.n / nd.k), nd.k, hp.norm_eps);
                break;
            }
            if (rows(x) == rows(y)) {
                dispatch_.rmsnorm(xr, vec, ptr(y), rows(y), nd.n, hp.norm_eps);
                break;
            }
            // OUT_ROWS from TOKENS: gather the rows whose logits are wanted, then normalise them.
            int64_t src = 0, dst = 0;
            for (const SeqInput& in : st.batch) {
                const int64_t n = int64_t(in.tokens.size()), keep = in.all_logits ? n : 1;
                for (int64_t i = n - keep; i < n; ++i, ++dst)
                    std::memcpy(ptr(y) + dst * nd.n, ptr(x) + (src + i) * nd.n, size_t(nd.n) * sizeof(float));
                src += n;
            }
            dispatch_.rmsnorm(ptr(y), vec, ptr(y), st.n_rows, nd.n, hp.norm_eps);
            break;
        }
        case OpKind::MATMUL: {
            const int32_t x = nd.in[0], y = nd.out[0];
            if (nd.norm == graph::WeightRole::NONE) {
                dispatch_.matmul(nd.role, ptr(x), stride(x), rows(y), ptr(y), stride(y), vec);
                break;
            }
            // RMSNorm fused into the input quantisation; OUT_ROWS from TOKENS: the kept rows of x,
            // as the RMSNORM case gathers them
            const int64_t* keep = nullptr;
            if (rows(x) != rows(y)) {
                keep_rows_.clear();
                int64_t src = 0;
                for (const SeqInput& in : st.batch) {
                    const int64_t n = int64_t(in.tokens.size()), k = in.all_logits ? n : 1;
                    for (int64_t i = n - k; i < n; ++i) keep_rows_.push_back(src + i);
                    src += n;
                }
                keep = keep_rows_.data();
            }
            dispatch_.rmsnorm_matmul(nd.role, ptr(x), stride(x), keep, rows(y), node_norm_[node_index], hp.norm_eps,
                                     ptr(y), stride(y), vec);
            break;
        }
        case OpKind::ROPE:
            if (graph_.shape.is_mla()) {
                mla_rope(nd, st);
                break;
            }
            dispatch_.rope(ptr(nd.in[0]), stride(nd.in[0]), ptr(nd.out[0]), ptr(nd.in[1]), stride(nd.in[1]),
                           ptr(nd.out[1]), st.n_tok, pos_.data(), rope_params());
            break;
        case OpKind::KV_WRITE: graph_.shape.is_mla() ? mla_write_kv(nd, st) : write_kv(nd, st); break;
        case OpKind::ROPE_KV_WRITE: rope_write_kv(nd, st); break;
        case OpKind::ATTENTION: attend(nd, st); break;
        case OpKind::SWIGLU:
            dispatch_.swiglu(ptr(nd.in[0]), stride(nd.in[0]), ptr(nd.in[1]), stride(nd.in[1]), ptr(nd.out[0]),
                             rows(nd.out[0]), nd.n);
            break;
        case OpKind::ADD: {
            // y = a + b: in place over a when y aliases it (the residual stream), else copy a first.
            float* y = ptr(nd.out[0]);
            const int64_t m = rows(nd.out[0]);
            if (y != ptr(nd.in[0])) std::memcpy(y, ptr(nd.in[0]), size_t(m * nd.n) * sizeof(float));
            dispatch_.add(y, ptr(nd.in[1]), m, nd.n);
            break;
        }
        case OpKind::OUTPUT: dispatch_.output(); break;
        case OpKind::MOE_ROUTE: moe_route(nd, st); break;
        case OpKind::MOE_MATMUL: moe_matmul(nd, st); break;
        case OpKind::MOE_COMBINE: moe_combine(nd, st); break;
        case OpKind::HEAD_MATMUL: head_matmul(nd, st); break;
        case OpKind::MLA_ATTENTION: mla_attend(nd, st); break;
        case OpKind::ALL_REDUCE:
            if (tp_) {
                DUET_CHECK(ptr(nd.in[0]) == ptr(nd.out[0]), "engine: ALL_REDUCE of layer {} is not in place", nd.layer);
                tp_->all_reduce_sum(ptr(nd.out[0]), rows(nd.out[0]) * nd.n);
                break;
            }
            [[fallthrough]];
        case OpKind::SEND:
        case OpKind::RECV:
            if (tp_) {  // the residual stream between pipeline stages (graph/shard_pipeline_parallel.h)
                const int32_t t = nd.kind == OpKind::SEND ? nd.in[0] : nd.out[0];
                DUET_CHECK(graph_.contiguous(t), "engine: {} of layer {} is strided", graph::op_kind_name(nd.kind), nd.layer);
                if (nd.kind == OpKind::SEND) tp_->send(ptr(t), rows(t) * nd.n, int(nd.k));
                else tp_->recv(ptr(t), rows(t) * nd.n, int(nd.k));
                break;
            }
            [[fallthrough]];
        case OpKind::REDUCE_SCATTER:
        case OpKind::ALL_GATHER:
            fail("the engine has no communicator for the {} node of layer {} (tensor parallelism runs under mpirun)",
                 graph::op_kind_name(nd.kind), nd.layer);
        default:
            DUET_CHECK(false, "engine: {} has no host kernel", graph::op_kind_name(nd.kind));
    }
}

void Engine::write_kv(const graph::Node& nd, const Step& st) {
    KvCache& cache = *kv_;
    const int32_t il = nd.layer - kv_layer0_;
    const int64_t bt = cache.block_tokens(), n_kv = nd.n / 2;
    const DType kv_type = cache.config().kv_type;
    const size_t rb = cache.row_bytes();
    const float *k = ptr(nd.in[0]), *v = ptr(nd.in[1]);
    const int64_t ks = stride(nd.in[0]), vs = stride(nd.in[1]);
    dispatch_.kv_write([&] {
        int64_t t = 0;
        for (const SeqInput& in : st.batch) {
            const auto& blocks = in.kv->blocks();
            for (size_t i = 0; i < in.tokens.size(); ++i, ++t) {
                const int64_t p = pos_[size_t(t)];
                const BlockId b = blocks[size_t(p / bt)];
                store_kv_row(k + t * ks, cache.k_block(il, b) + size_t(p % bt) * rb, n_kv, kv_type);
                store_kv_row(v + t * vs, cache.v_block(il, b) + size_t(p % bt) * rb, n_kv, kv_type);
            }
        }
    });
}

Dispatcher::RopeParams Engine::rope_params() const {
    const model::Hparams& hp = model_->hparams();
    const model::TensorRef& rf = model_->weights()[graph::WeightRole::ROPE_FREQS];
    const float* factors = rf.present() ? rf.f32() : nullptr;
    // The graph's head counts: this rank's under tensor parallelism.
    return {graph_.shape.n_head, graph_.shape.n_head_kv, hp.head_dim, hp.n_rot, hp.rope_freq_base,
            hp.rope_freq_scale, factors, rope_order_};
}

void Engine::rope_write_kv(const graph::Node& nd, const Step& st) {
    KvCache& cache = *kv_;
    const int64_t bt = cache.block_tokens();
    const size_t rb = cache.row_bytes();
    const int32_t il = nd.layer - kv_layer0_;  // the cache's layer (a pipeline stage holds its own)
    kdst_.resize(size_t(st.n_tok));
    vdst_.resize(size_t(st.n_tok));
    int64_t t = 0;
    for (const SeqInput& in : st.batch) {  // the cache row of every token, as write_kv() finds it
        const auto& blocks = in.kv->blocks();
        for (size_t i = 0; i < in.tokens.size(); ++i, ++t) {
            const int64_t p = pos_[size_t(t)];
            const BlockId b = blocks[size_t(p / bt)];
            kdst_[size_t(t)] = cache.k_block(il, b) + size_t(p % bt) * rb;
            vdst_[size_t(t)] = cache.v_block(il, b) + size_t(p % bt) * rb;
        }
    }
    dispatch_.rope_kv_write(ptr(nd.in[0]), stride(nd.in[0]), ptr(nd.out[0]), ptr(nd.in[1]), stride(nd.in[1]),
                            ptr(nd.in[2]), stride(nd.in[2]), st.n_tok, pos_.data(), rope_params(),
                            cache.config().kv_type, kdst_.data(), vdst_.data(), store_kv_row);
}

void Engine::attend(const graph::Node& nd, const Step& st) {
    const model::Hparams& hp = model_->hparams();
    KvCache& cache = *kv_;
    const int32_t il = nd.layer - kv_layer0_;  // the cache's layer (a pipeline stage holds its own)
    const int64_t n_q = nd.n;
    const float* q = ptr(nd.in[0]);
    float* out = ptr(nd.out[0]);
    const float scale = 1.0f / std::sqrt(float(hp.head_dim));
    // Block pointers of every sequence for this layer, one array for the whole batch.
    size_t n_ptr = 0;
    for (const SeqInput& in : st.batch) n_ptr += in.kv->blocks().size();
    kptr_.resize(n_ptr);
    vptr_.resize(n_ptr);
    attn_seqs_.clear();
    int64_t off = 0;
    size_t p = 0;
    for (const SeqInput& in : st.batch) {
        const size_t first = p;
        for (BlockId b : in.kv->blocks()) {
            kptr_[p] = cache.k_block(il, b);
            vptr_[p++] = cache.v_block(il, b);
        }
        const int64_t n = int64_t(in.tokens.size());
        attn_seqs_.push_back({q + off * n_q, n, in.kv->n_tokens(),
                              kernels::KvView{&kptr_[first], &vptr_[first], cache.block_tokens(), cache.config().kv_type},
                              out + off * n_q});
        off += n;
    }
    if (prefetch_) prefetch_->issue(nd.layer);  // this layer's gate/up lines load while attention runs
    dispatch_.attention(attn_seqs_, graph_.shape.n_head, graph_.shape.n_head_kv, hp.head_dim, scale);
}

}  // namespace duet::runtime
