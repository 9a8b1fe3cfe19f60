#pragma once
// The RoPE + KV-write fusion: a ROPE node followed by the KV_WRITE of the same layer that reads
// its rotated k becomes one ROPE_KV_WRITE node that rotates q into q_rope and rotates each k row
// while storing it (with v) into the KV cache — the rotated k never goes through the activation
// arena.
//
// Rewrite (consecutive nodes, same layer, k_rope read by no other node, k read by no other node):
//   ROPE {q, k} -> {q_rope, k_rope};  KV_WRITE {k_rope, v} -> {}
//   => ROPE_KV_WRITE {q, k, v} -> {q_rope}   (n = the ROPE's n, k = head_dim, dtype = the KV dtype)
// Latent attention's ROPE (q and the shared k_pe) feeds a KV_WRITE of the latent row [c | k_pe]
// whose first input is c, not the rotated k: it does not match and stays.
// Numerics are unchanged: the same rope kernel rotates the same k values and the same store
// converts them to the cache's type. Modelled: one record (one launch) where there were two, and
// the m × n_embd_kv f32 write of k_rope and its read by KV_WRITE are gone (sim/planner.cpp).
#include "graph/pass.h"

namespace duet::graph {

class FuseRopeKvWrite : public Pass {
public:
    const char* name() const override { return "fuse_rope_kv_write"; }
    Graph run(const Graph& g) const override;
};

}  // namespace duet::graph
