#pragma once
// The KV cache the modelled machine can hold under one placement: device memory
// (SimHardware::mem_capacity_bytes, from the memory preset) minus everything else one serving
// step needs — weights, block index, activations of a step of step_tokens tokens, conversion
// cache and workspace (sim/memory_accounting.h) — divided into paged blocks of
// SimHardware::kv_block_tokens tokens. With tensor parallelism (opts.parallel.tp ranks, one per
// NPU) each rank holds its share of the weights and of the KV heads in its own NPU's memory; a
// block spans the ranks, and the bytes reported are summed over them. With expert parallelism
// (opts.experts.ep ranks, data-parallel attention) each rank holds its experts' share of the
// weights and whole blocks of its own sequences: the blocks are the ranks' together; with both on
// the same ranks (tp == ep) each rank holds E/ep whole experts and a block spans the ranks as under
// tensor parallelism. With
// pipeline parallelism (opts.parallel.pp stages, one NPU each) a stage holds its layers' weights
// and its layers' part of every block: the pool has the blocks of the stage with the least room.
#include <nlohmann/json.hpp>

#include <cstdint>

#include "sim/hardware.h"
#include "graph/model_shape.h"
#include "sim/run_options.h"

namespace duet::serving {

struct KvCapacity {
    uint64_t device_bytes = 0;  // memory capacity of the machine (0: unknown)
    uint64_t other_bytes = 0;   // weights + block index + activations + conversion + workspace
    uint64_t block_bytes = 0;   // one block: block_tokens * 2 (K, V) * n_layer * n_head_kv * head_dim * KV element
    int64_t block_tokens = 0;
    int64_t n_blocks = 0;       // (device_bytes - other_bytes) / block_bytes; 0 when it does not fit
};

// {"blocks", "block_tokens", "block_bytes", "device_bytes", "other_bytes"} (docs/report-schema.md).
nlohmann::json kv_capacity_json(const KvCapacity& c);

// One KV block's bytes (SimHardware::kv_block_tokens tokens, every layer) under `opts`: one
// tensor-parallel rank's KV heads (sim/memory_accounting.h).
uint64_t kv_block_bytes(const graph::ModelShape& shape, const sim::RunOptions& opts, const sim::SimHardware& hw);

// One tensor-parallel rank's share of one token's K and V (every layer) under `opts`: its
// ⌈n_head_kv / tp⌉ KV heads (a latent KV is whole on every rank); tp 1: the whole token's.
uint64_t kv_rank_bytes_per_token(const graph::ModelShape& shape, const sim::RunOptions& opts,
                                 const sim::SimHardware& hw);

// Throws duet::Error when the device memory is unknown (mem_capacity_bytes = 0).
KvCapacity kv_capacity(const graph::ModelShape& shape, const sim::RunOptions& opts, const sim::SimHardware& hw,
                       int64_t step_tokens);

}  // namespace duet::serving
