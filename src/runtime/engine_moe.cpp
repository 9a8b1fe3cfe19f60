// The Mixture-of-Experts FFN of the engine (graph/moe_builder.h has the data flow).
//
// MOE_ROUTE turns the router logits into each token's top-k experts and weights by
// runtime/moe_router.h (softmax or sigmoid, the selection bias, group-limited routing, the k
// largest, renormalised and scaled by the family's rule, as llama.cpp's build_moe_ffn applies it).
// It also groups the batch's (token, slot) pairs by expert.
// MOE_MATMUL gathers the rows routed to each expert that has tokens and hands them to the weight
// source's matmul_stack: the plain source runs them as one kernels::matmul_grouped (one parallel
// section over (expert, column block) items) on the stacked tensor, the PIM layout
// (runtime/pim_weight_source.h) each expert through its own base and block index. Each expert's
// weights are read once per step (a GEMM in prefill, a GEMV for a single decode token), and
// experts no token chose are not read at all.
// MOE_COMBINE sums each token's k expert rows by their weights and adds the shared expert (times
// sigmoid of its gate where the family has one).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "runtime/engine.h"
#include "runtime/moe_router.h"

namespace duet::runtime {

void Engine::moe_route(const graph::Node& nd, const Step& st) {
    const model::Hparams& hp = model_->hparams();
    const int64_t n_exp = nd.n, k = nd.k, n_tok = st.n_tok;
    const float* logits = ptr(nd.in[0]);
    const int64_t ls = stride(nd.in[0]);
    float* w = ptr(nd.out[0]);
    const int64_t ws = stride(nd.out[0]);
    moe_ids_.resize(size_t(n_tok * k));
    moe_slots_.resize(size_t(n_exp));
    const float* bias = hp.expert_probs_bias ? plain_.tensor(graph::WeightRole::FFN_EXP_PROBS_B, nd.layer).f32() : nullptr;
    const MoeRouting routing = MoeRouting::of(hp);
    DUET_CHECK(routing.n_expert == n_exp && routing.k == k, "engine: router of layer {} is top-{} of {}", nd.layer, k,
               n_exp);
    dispatch_.moe([&] {
        MoeRouterScratch scratch;
        std::vector<int32_t> ids(static_cast<size_t>(k));
        for (auto& s : moe_slots_) s.clear();
        for (int64_t t = 0; t < n_tok; ++t) {
            route_token(routing, logits + t * ls, bias, ids.data(), w + t * ws, scratch);
            for (int64_t j = 0; j < k; ++j) {
                moe_ids_[size_t(t * k + j)] = ids[size_t(j)];
                moe_slots_[size_t(ids[size_t(j)])].push_back(t * k + j);
            }
        }
    });
}

void Engine::moe_matmul(const graph::Node& nd, const Step& st) {
    const WeightSource& ws = dispatch_.weight_source();
    const WeightInfo wi = ws.info(nd.role, nd.layer);  // one expert's matrix as the source holds it
    const int64_t n = nd.n, k = nd.k, K = graph_.shape.n_expert_used;
    const int32_t xt = nd.in[0], yt = nd.out[0];
    const float* x = ptr(xt);
    float* y = ptr(yt);
    const int64_t xs = stride(xt), ys = stride(yt);
    // gate/up read the token's normed row (width k) for every slot; down reads slot j's own
    // activation row (width K * k, slot j at column j * k)
    const bool per_slot = graph_.tensors[size_t(xt)].width == K * k;
    DUET_CHECK(per_slot || graph_.tensors[size_t(xt)].width == k, "engine: {} of layer {} reads a tensor of width {}",
               graph::op_kind_name(nd.kind), nd.layer, graph_.tensors[size_t(xt)].width);
    DUET_CHECK(wi.n == n && wi.k == k, "engine: {} of layer {} holds {} x {} experts for a node of {} x {}",
               graph::weight_role_name(nd.role), nd.layer, wi.n, wi.k, n, k);
    // The record: the experts this step really reads (the lowering assumes uniform routing).
    graph::OpRecord rec = graph::lower(graph_, nd, st.lowering);
    rec.n_expert_active = 0;
    for (const auto& slots : moe_slots_) rec.n_expert_active += slots.empty() ? 0 : 1;
    rec.weight_dtype = wi.dtype;
    rec.weight_bytes = uint64_t(rec.n_expert_active) * uint64_t(n) * row_bytes(wi.dtype, k);
    dispatch_.set_record(rec);
    dispatch_.moe([&] {
        moe_order_.clear();
        moe_groups_.clear();
        for (size_t e = 0; e < moe_slots_.size(); ++e) {
            const std::vector<int64_t>& slots = moe_slots_[e];
            if (slots.empty()) continue;
            StackRows g;
            g.index = int64_t(e);
            g.m = int64_t(slots.size());
            g.x_stride = k;
            g.y_stride = n;  // x and y are set below, once moe_x_ and moe_y_ have their size
            moe_groups_.push_back(g);
            moe_order_.insert(moe_order_.end(), slots.begin(), slots.end());
        }
        const int64_t rows = int64_t(moe_order_.size());
        moe_x_.resize(std::max(moe_x_.size(), size_t(rows * k)));
        moe_y_.resize(std::max(moe_y_.size(), size_t(rows * n)));
        int64_t r0 = 0;
        for (StackRows& g : moe_groups_) {
            g.x = moe_x_.data() + r0 * k;
            g.y = moe_y_.data() + r0 * n;
            r0 += g.m;
        }
        pool_.parallel_for(rows, 16, [&](int64_t b, int64_t e) {
            for (int64_t r = b; r < e; ++r) {
                const int64_t t = moe_order_[size_t(r)] / K, j = moe_order_[size_t(r)] % K;
                const float* src = x + t * xs + (per_slot ? j * k : 0);
                std::memcpy(moe_x_.data() + r * k, src, size_t(k) * sizeof(float));
            }
        });
        ws.matmul_stack(nd.role, nd.layer, moe_groups_.data(), int64_t(moe_groups_.size()), pool_);
        pool_.parallel_for(rows, 16, [&](int64_t b, int64_t e) {
            for (int64_t r = b; r < e; ++r) {
                const int64_t t = moe_order_[size_t(r)] / K, j = moe_order_[size_t(r)] % K;
                std::memcpy(y + t * ys + j * n, moe_y_.data() + r * n, size_t(n) * sizeof(float));
            }
        });
    });
}

void Engine::moe_combine(const graph::Node& nd, const Step& st) {
    const int64_t E = nd.n, K = nd.k, n_tok = st.n_tok;
    const float* down = ptr(nd.in[0]);
    const float* w = ptr(nd.in[1]);
    const float* shared = nd.in.size() > 2 ? ptr(nd.in[2]) : nullptr;
    const float* gate = nd.in.size() > 3 ? ptr(nd.in[3]) : nullptr;
    const int64_t ds = stride(nd.in[0]), wsd = stride(nd.in[1]);
    const int64_t ss = shared ? stride(nd.in[2]) : 0, gs = gate ? stride(nd.in[3]) : 0;
    float* out = ptr(nd.out[0]);
    const int64_t os = stride(nd.out[0]);
    dispatch_.moe([&] {
        pool_.parallel_for(n_tok, 4, [&](int64_t b, int64_t e) {
            for (int64_t t = b; t < e; ++t) {
                float* o = out + t * os;
                std::memset(o, 0, size_t(E) * sizeof(float));
                for (int64_t j = 0; j < K; ++j) {
                    const float wj = w[t * wsd + j];
                    const float* d = down + t * ds + j * E;
                    for (int64_t i = 0; i < E; ++i) o[i] += wj * d[i];
                }
                if (!shared) continue;
                const float g = gate ? 1.0f / (1.0f + std::exp(-gate[t * gs])) : 1.0f;
                for (int64_t i = 0; i < E; ++i) o[i] += g * shared[t * ss + i];
            }
        });
    });
}

}  // namespace duet::runtime
