#pragma once
// One tensor-parallel rank's view of a model's weights (issue 11): the same model::Weights
// struct, every matrix a slice of the file's mapping in place — nothing is copied, and the
// rank's page faults touch only its slices (plus the replicated tensors; a column slice of
// rows shorter than a few pages shares those pages with the neighbouring ranks' slices).
//
// Rank r of tp (split from graph/parallel.h's tp_shard, the same one the TP graph pass uses)
// slices every BLOCK tensor as its row of the tensor catalogue says (graph/tensor_catalogue.h,
// column `tp`): ROWS takes the rank's range of the row Dim (its query heads, its KV heads —
// replicated on tp / n_head_kv ranks when tp > n_head_kv, GQA — or its FFN range; a bias
// follows its matrix), COLS the range of the column Dim (row-parallel: a partial sum), STACK
// the range of a per-head stack (latent attention's W_UK, W_UV: its query heads); a per-expert
// stack is sliced alike in every expert (the TensorRef keeps the file's stride between them).
// REPLICATED tensors (embeddings, norms, the lm-head, rope factors, the MoE router, latent
// attention's low-rank projections) stay whole.
// A column slice of a quantised matrix must start and end on a block (32 elements for
// Q8_0/Q4_0/Q5_0, 256 for K-quants): the FFN split is made in blocks (ff_align); the heads'
// split cannot be moved, so a split that cuts a block of the attention output is refused.
#include <cstdint>

#include "graph/parallel.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace duet::runtime {

// The FFN split unit of `w`: the largest block of any matrix whose columns split by an FFN
// range (dense, routed experts, shared experts; 1 for f32/f16/bf16).
int64_t tp_ff_align(const model::Weights& w);

// Rank sh.rank's slices of `full` (which must outlive the result). Throws duet::Error naming
// --tp, the tensor and its block when a column slice would cut a quantised block.
model::Weights shard_weights(const model::Weights& full, const model::Hparams& hp, const graph::TpShard& sh);

// Bytes of the tensors the rank reads (its slices plus the replicated tensors; the tied
// output counted once) — what it loads, against full.total_bytes().
uint64_t shard_bytes(const model::Weights& shard);

// Reads every page of the slices of `shard` (and only those) into this process's page
// tables: the TP form of runtime/warmup.h's prefault. Returns the bytes touched.
uint64_t prefault_slices(const model::Weights& shard);

}  // namespace duet::runtime
