#pragma once
// The Mixture-of-Experts router of one token, as llama.cpp's build_moe_ffn applies it (and
// DeepSeek-V3's MoEGate, topk_method noaux_tc):
//   1. scores: softmax over all n_expert logits, or an independent sigmoid per expert;
//   2. selection scores: score + bias when the router has a selection bias (exp_probs_b,
//      DeepSeek-V3's e_score_correction_bias), else the scores;
//   3. group-limited routing (n_group > 1 and n_group_used < n_group): the experts are n_group
//      groups of n_expert / n_group consecutive ids; a group scores the sum of its two largest
//      selection scores; the n_group_used best groups are kept (ties to the lower group id) and
//      the experts of the others cannot be chosen;
//   4. the k largest selection scores among the choosable experts (ties to the lower expert id),
//      in descending order;
//   5. weights: the unbiased scores of the chosen experts, divided by their sum when `norm`,
//      times `scale`.
// A scalar path: the router is n_expert values per token. Thread safety: a pure function of its
// arguments; `scratch` is the caller's.
#include <cstdint>
#include <vector>

#include "model/hparams.h"

namespace duet::runtime {

struct MoeRouting {
    model::ExpertGating gating = model::ExpertGating::SOFTMAX;
    int64_t n_expert = 0;
    int64_t k = 0;             // experts per token
    int64_t n_group = 0;       // 0 or 1: no groups
    int64_t n_group_used = 0;  // groups kept (n_group_used >= n_group: every group)
    bool norm = false;
    float scale = 1.0f;

    // The router of a model's MoE layers (model/hparams.h).
    static MoeRouting of(const model::Hparams& hp);
};

struct MoeRouterScratch {
    std::vector<float> score, select, group_score;
    std::vector<int32_t> order, group_order;
};

// Routes one token: logits [n_expert], bias [n_expert] or nullptr; writes ids [k] and weights [k].
void route_token(const MoeRouting& r, const float* logits, const float* bias, int32_t* ids, float* weights,
                 MoeRouterScratch& scratch);

}  // namespace duet::runtime
