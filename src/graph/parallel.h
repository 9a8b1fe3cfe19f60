#pragma once
// How a model is split across devices or MPI ranks (Megatron-style tensor parallelism and
// layer-wise pipeline parallelism). Pure functions of the shape: the engine (which slices of
// each matrix a rank loads), the TP graph pass (graph/shard_tensor_parallel.h), the pipeline
// pass and the simulator all take their split from here, so they cannot disagree.
//
// Tensor parallel over `tp` ranks, rank r:
//   - query heads split evenly: n_head % tp == 0 is required (as vLLM and Megatron require);
//   - KV heads split evenly when n_head_kv % tp == 0; when tp % n_head_kv == 0 (more ranks than
//     KV heads, GQA) each rank keeps the one KV head its query heads read, replicated on
//     tp / n_head_kv ranks; any other ratio is refused;
//   - the FFN's intermediate features split into contiguous ranges in units of `ff_align`
//     (a quantised block along the down projection's rows: 32 for Q8_0/Q4_0, 256 for K-quants),
//     as evenly as the units allow;
//   - Mixture-of-Experts layers: every routed expert's and the shared experts' intermediate
//     features split like the dense FFN's (ff_exp, ff_shexp, in the same units); the experts
//     themselves are not divided among ranks (any n_expert runs), the router is replicated;
//   - latent attention (MLA): split by query heads like the dense attention; its low-rank
//     projections are replicated, so each rank caches the whole latent KV row;
//   - embedding table, norms and the lm-head are replicated.
// Pipeline parallel over `pp` stages: stage s runs layers [s·L/pp, (s+1)·L/pp) (integer
// division, so stages differ by at most one layer); stage 0 also embeds, the last stage also
// runs the output norm, lm-head and sampling.
// Expert parallel over `ep` ranks (Mixture-of-Experts models only), rank e: the routed experts
// split into contiguous blocks, rank e holding experts [e·E/ep, (e+1)·E/ep) of every MoE layer
// (ep must divide n_expert); attention, norms, the router and the shared experts are replicated.
// Tensor and expert parallel on the same N ranks (tp == ep == N, vLLM's --tensor-parallel-size N
// --enable-expert-parallel: FusedMoEParallelConfig.make in vllm/model_executor/layers/fused_moe/
// config.py sets ep_size = tp_size, ep_rank = tp_rank and no tensor split of the experts):
// attention, dense layers, shared experts, norms and the lm-head split as under --tp N; the
// routed experts whole, rank r holding experts [r·E/N, (r+1)·E/N) (ep_shard). Tensor parallelism
// inside data-parallel attention (1 < tp < ep, tp dividing ep; vLLM's --data-parallel-size ep/tp
// --tensor-parallel-size tp --enable-expert-parallel, SGLang's --tp ep --dp ep/tp
// --enable-dp-attention with attention TP inside each DP group): ep/tp groups of tp consecutive
// ranks, each group serving its share of the sequences with attention, dense layers and shared
// experts split over its tp ranks (rank r is tensor-parallel rank r mod tp); the routed experts
// whole over all ep ranks, rank r holding experts [r·E/ep, (r+1)·E/ep). A pair where tp does not
// divide ep is refused (check_tp_with_ep).
// Errors (duet::Error) name the flag (--tp / --pp / --ep), the value and what is allowed.
#include <cstdint>

#include "graph/model_shape.h"

namespace duet::graph {

struct Range {
    int64_t begin = 0;
    int64_t count = 0;
    int64_t end() const { return begin + count; }
    bool operator==(const Range&) const = default;
};

// How a tensor-parallel group divides a layer (GraphOptions::tp_partition, [topology] tp_split):
//   MEGATRON  the split above: heads and FFN features per rank, partial sums all-reduced;
//   CENT      CENT's model-parallel trace (docs/scale-out.md, "CENT's partition"): every weight
//             matrix split by output rows over the ranks, each output all-gathered; every rank
//             runs all heads' attention (q.K^T over the context positions its memory holds, one
//             tp-th of them; softmax and p.V over all positions), rotary, norms and the SiLU gate
//             product over the whole width.
enum class TpPartition { MEGATRON, CENT };

struct TpShard {
    int tp = 1;     // ranks sharing every layer
    int rank = 0;   // this rank, 0 <= rank < tp
    Range q_heads;  // query heads this rank computes
    Range kv_heads; // KV heads this rank keeps (replicated across ranks when tp > n_head_kv)
    Range ff;       // FFN intermediate features (rows of gate/up, columns of down)
    Range ff_exp;   // each routed expert's intermediate features (empty for a dense model)
    Range ff_shexp; // the shared experts' intermediate features (empty without them)
    int context_ranks = 1;  // ranks whose memories share each sequence's context positions (CENT: tp)
    bool operator==(const TpShard&) const = default;
};

// Pipeline stage `stage` of `pp` (layers from pp_stage_layers).
struct PpStage {
    int pp = 1;
    int stage = 0;
    Range layers;
    bool first() const { return stage == 0; }
    bool last() const { return stage == pp - 1; }
    bool operator==(const PpStage&) const = default;
};

struct EpShard {
    int ep = 1;     // ranks sharing the routed experts
    int rank = 0;   // this rank, 0 <= rank < ep
    Range experts;  // routed experts this rank holds (every MoE layer alike)
    bool operator==(const EpShard&) const = default;
};

// Rank `rank`'s experts under expert parallelism of degree `ep`.
EpShard ep_shard(const ModelShape& s, int ep, int rank);

// Rank `rank`'s share of `s` under tensor parallelism of degree `tp`; `whole_experts` (tp with
// ep on the same ranks): every routed expert keeps all its features (ff_exp the whole width).
TpShard tp_shard(const ModelShape& s, int tp, int rank, int64_t ff_align = 1, bool whole_experts = false);

// Throws duet::Error naming --tp and --ep unless tp is 1, ep is 1, or tp divides ep.
void check_tp_with_ep(int tp, int ep);

// The ranks of one pipeline stage: tp without expert parallelism, else ep (the tensor-parallel
// groups tile the expert-parallel ranks). Requires check_tp_with_ep.
int stage_ranks(int tp, int ep);

// The data-parallel attention groups of expert parallelism: ep / tp (1 without it, and under
// tp == ep, where every rank holds every sequence). Each group serves its share of the sequences;
// with more than one the experts' rows cross the groups by all-to-all. Requires check_tp_with_ep.
int attention_dp(int tp, int ep);

// Layers of pipeline stage `stage` of `pp`.
Range pp_stage_layers(const ModelShape& s, int pp, int stage);

}  // namespace duet::graph
