#include "graph/parallel.h"

#include "core/error.h"

namespace duet::graph {

namespace {

// Rank `rank`'s contiguous range of an FFN `width` features wide, in units of `align` features,
// as even as the units allow.
Range ff_range(const ModelShape& s, const char* what, int64_t width, int tp, int rank, int64_t align) {
    if (align < 1 || width % align != 0)
        fail("the {} width {} of '{}' is not a multiple of its block of {} features", what, width, s.name, align);
    const int64_t units = width / align;
    if (units < tp)
        fail("--tp = {} is more than the {} blocks of {} {} features of '{}' (allowed: 1 to {})", tp, units, align,
             what, s.name, units);
    const int64_t b = units * rank / tp, e = units * (rank + 1) / tp;
    return {b * align, (e - b) * align};
}

}  // namespace

TpShard tp_shard(const ModelShape& s, int tp, int rank, int64_t ff_align, bool whole_experts) {
    if (tp < 1 || tp > 1024) fail("--tp = {} is not allowed (allowed: 1 to 1024)", tp);
    if (rank < 0 || rank >= tp) fail("tensor-parallel rank {} is not allowed (allowed: 0 to {})", rank, tp - 1);
    if (s.n_head % tp != 0)
        fail("--tp = {} does not divide the {} attention heads of '{}' (allowed: a divisor of {})", tp, s.n_head,
             s.name, s.n_head);
    TpShard sh;
    sh.tp = tp;
    sh.rank = rank;
    const int64_t qc = s.n_head / tp;
    sh.q_heads = {rank * qc, qc};
    if (s.n_head_kv % tp == 0) {
        const int64_t kc = s.n_head_kv / tp;
        sh.kv_heads = {rank * kc, kc};
    } else if (tp % s.n_head_kv == 0) {
        const int64_t group = s.n_head / s.n_head_kv;  // query heads per KV head
        sh.kv_heads = {sh.q_heads.begin / group, 1};
    } else {
        fail("--tp = {} and the {} KV heads of '{}' neither divide each other (allowed: a divisor or a multiple of "
             "{} that divides {})",
             tp, s.n_head_kv, s.name, s.n_head_kv, s.n_head);
    }
    sh.ff = ff_range(s, "FFN", s.n_ff, tp, rank, ff_align);
    if (s.is_moe()) {
        sh.ff_exp = whole_experts ? Range{0, s.n_ff_exp} : ff_range(s, "expert FFN", s.n_ff_exp, tp, rank, ff_align);
        if (s.n_ff_shexp > 0) sh.ff_shexp = ff_range(s, "shared-expert FFN", s.n_ff_shexp, tp, rank, ff_align);
    }
    return sh;
}

EpShard ep_shard(const ModelShape& s, int ep, int rank) {
    if (ep < 1 || ep > 1024) fail("--ep = {} is not allowed (allowed: 1 to 1024)", ep);
    if (!s.is_moe() && ep > 1)
        fail("--ep = {}: '{}' has no routed experts, expert parallelism needs a Mixture-of-Experts model (allowed: "
             "--ep 1)", ep, s.name);
    if (rank < 0 || rank >= ep) fail("expert-parallel rank {} is not allowed (allowed: 0 to {})", rank, ep - 1);
    EpShard sh;
    sh.ep = ep;
    sh.rank = rank;
    if (!s.is_moe()) return sh;
    if (s.n_expert % ep != 0)
        fail("--ep = {} does not divide the {} routed experts of '{}' (allowed: a divisor of {})", ep, s.n_expert,
             s.name, s.n_expert);
    const int64_t per = s.n_expert / ep;
    sh.experts = {rank * per, per};
    return sh;
}

void check_tp_with_ep(int tp, int ep) {
    if (tp > 1 && ep > 1 && ep % tp != 0)
        fail("--tp {} with --ep {}: the tensor-parallel groups must tile the expert-parallel ranks (allowed: --ep 1, "
             "or --ep a multiple of {}: --ep / --tp groups of {} ranks, each running its sequences' attention split "
             "over its ranks; or --tp 1 with --ep N)",
             tp, ep, tp, tp);
}

int stage_ranks(int tp, int ep) {
    check_tp_with_ep(tp, ep);
    return ep > 1 ? ep : tp;
}

int attention_dp(int tp, int ep) {
    check_tp_with_ep(tp, ep);
    return ep > 1 ? ep / tp : 1;
}

Range pp_stage_layers(const ModelShape& s, int pp, int stage) {
    if (pp < 1 || pp > s.n_layer)
        fail("--pp = {} is not allowed for the {} layers of '{}' (allowed: 1 to {})", pp, s.n_layer, s.name, s.n_layer);
    if (stage < 0 || stage >= pp) fail("pipeline stage {} is not allowed (allowed: 0 to {})", stage, pp - 1);
    const int64_t b = s.n_layer * stage / pp, e = s.n_layer * (stage + 1) / pp;
    return {b, e - b};
}

}  // namespace duet::graph
