#include "sim/planner.h"

#include "core/error.h"
#include "graph/lowering.h"

namespace duet::sim {

void plan_forward(const graph::Graph& g, int32_t n_seq, int64_t n_past, int64_t n_new, Phase phase, OpTrace& out) {
    const std::vector<graph::SeqSpan> seqs(size_t(n_seq), graph::SeqSpan{n_past, n_new});
    const graph::Batch b{seqs, int64_t(n_seq) * n_new, n_seq, phase};
    for (const graph::Node& nd : g.nodes) out.push_back(graph::lower(g, nd, b));
}

namespace {
void check_lengths(int64_t seq_len, int64_t gen_len, int32_t batch, int64_t n_cached) {
    if (seq_len < 1) fail("--seq-len = {} is not allowed (allowed: 1 or more)", seq_len);
    if (gen_len < 1) fail("--gen-len = {} is not allowed (allowed: 1 or more)", gen_len);
    if (batch < 1) fail("--batch = {} is not allowed (allowed: 1 or more)", batch);
    if (n_cached < 0 || n_cached >= seq_len)
        fail("cached prefix = {} tokens is not allowed for a {}-token prompt (allowed: 0 to {}: at least one token is "
             "computed)", n_cached, seq_len, seq_len - 1);
}
}  // namespace

Plan plan_generation(const graph::Graph& g, int64_t seq_len, int64_t gen_len, int32_t batch, int64_t n_cached) {
    check_lengths(seq_len, gen_len, batch, n_cached);
    Plan p;
    p.graph = std::make_shared<const graph::Graph>(g);
    p.ops.reserve(g.nodes.size() * size_t(gen_len));
    plan_forward(g, batch, n_cached, seq_len - n_cached, Phase::PREFILL, p.ops);
    p.forwards.push_back({Phase::PREFILL, n_cached, seq_len - n_cached, 0, p.ops.size()});
    for (int64_t t = 1; t < gen_len; ++t) {
        const size_t begin = p.ops.size();
        const int64_t n_past = seq_len + t - 1;
        plan_forward(g, batch, n_past, 1, Phase::DECODE, p.ops);
        p.forwards.push_back({Phase::DECODE, n_past, 1, begin, p.ops.size()});
    }
    return p;
}

Plan plan_generation(const ModelShape& s, int64_t seq_len, int64_t gen_len, int32_t batch,
                     const graph::GraphOptions& go, int64_t n_cached) {
    check_lengths(seq_len, gen_len, batch, n_cached);
    return plan_generation(graph::build_graph(s, go), seq_len, gen_len, batch, n_cached);
}

std::vector<ForwardSpan> split_forwards(const OpTrace& ops) {
    std::vector<ForwardSpan> out;
    for (size_t i = 0; i < ops.size(); ++i) {
        if (ops[i].kind == OpKind::EMBED || out.empty()) {
            if (!out.empty()) out.back().end = i;
            ForwardSpan f;
            f.phase = ops[i].phase;
            f.n_new = ops[i].n_seq > 0 ? ops[i].m / ops[i].n_seq : ops[i].m;
            f.begin = i;
            out.push_back(f);
        }
        if (ops[i].kind == OpKind::ATTENTION && ops[i].layer == 0) out.back().n_past = ops[i].n - out.back().n_new;
    }
    if (!out.empty()) out.back().end = ops.size();
    return out;
}

}  // namespace duet::sim
