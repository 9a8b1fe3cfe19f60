#pragma once
// Device memory of one run (docs/design.md "Memory accounting"), in bytes:
// Everything model-shaped comes from the plan's graph (graph/graph.h): its MATMUL nodes are the
// matrices, its RMSNORM nodes the norm vectors, its tensor lifetimes the activations.
//   weights      every matrix in its layout (NZ fractals for NPU-only layers, the PIM base
//                with granule padding otherwise) + embedding table and norms in plain form
//   block_index  the PIM base's block index
//   kv_cache     paged: batch * ceil(context / kv_block_tokens) blocks of kv_block_tokens
//                tokens * n_layer * the values one token keeps per layer in the KV dtype:
//                2 (K,V) * n_head_kv * head_dim, or with latent attention (MLA) the latent
//                kv_lora_rank + qk_rope_head_dim (kv_cache_latent says which); under tensor
//                parallelism n_head_kv is the rank's (the graph's, graph/shard_tensor_parallel.h)
//                and the latent is whole on every rank; a pipeline stage's graph counts its own
//                layers (graph/parallel.h PpStage) instead of n_layer
//   of weights   weights_experts_bytes: the routed experts' matrices (every expert of every MoE
//                layer, all resident); the rest of weights_bytes is shared by every token
//   activations  peak of the static memory plan (graph/memory_plan.h): the largest sum of
//                tensors alive at one node (first write .. last read), device dtype f16,
//                over every forward of the plan; with opts.multi_stream_memory_reuse = 0 a
//                collective's tensors stay live until the next collective (graph/memory_plan.h)
//   conversion   conversion cache: layer 0 in NZ when preconvert_first_token (and zero_copy_switch), the prefetch
//                buffers ((prefetch_depth + 1) blocks), and a staging buffer of the largest
//                matrix when zero_copy_switch is off. Must fit cache_limit_mb (else throws).
//   workspace    fp32 accumulation buffer of the largest matmul output (split-K) over the forwards
// Thread safety: pure function.
#include <cstdint>
#include <string>

#include "sim/hardware.h"
#include "graph/model_shape.h"
#include "sim/planner.h"
#include "sim/run_options.h"

namespace duet::sim {

struct MemoryBreakdown {
    uint64_t weights_bytes = 0;            // all weights, every layout
    uint64_t weights_pim_base_bytes = 0;   // part of weights_bytes held in the PIM layout (rest: NZ, plain)
    uint64_t weights_experts_bytes = 0;    // part of weights_bytes that is routed experts (MoE)
    uint64_t block_index_bytes = 0;
    uint64_t kv_cache_bytes = 0;
    bool kv_cache_latent = false;          // the cache holds MLA latents, not K and V
    uint64_t activations_bytes = 0;
    uint64_t conversion_bytes = 0;
    uint64_t workspace_bytes = 0;
    uint64_t total_bytes() const {
        return weights_bytes + block_index_bytes + kv_cache_bytes + activations_bytes + conversion_bytes +
               workspace_bytes;
    }
};

// `context` = seq_len + gen_len tokens per sequence. Throws duet::Error when the conversion
// cache exceeds opts.cache_limit_mb, naming the knob and what fills the cache.
MemoryBreakdown account_memory(const ModelShape& shape, const Plan& plan, int64_t context, int32_t batch,
                               const Placer& placer, const RunOptions& opts, const SimHardware& hw);

}  // namespace duet::sim
