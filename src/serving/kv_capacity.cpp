#include "serving/kv_capacity.h"

#include <algorithm>

#include "core/error.h"
#include "graph/parallel.h"
#include "sim/memory_accounting.h"
#include "sim/placement.h"
#include "sim/planner.h"

namespace duet::serving {

namespace {
sim::MemoryBreakdown one_block_memory(const graph::ModelShape& shape, const sim::RunOptions& opts,
                                      const sim::SimHardware& hw, int64_t step_tokens, int stage = 0) {
    // One step of step_tokens prompt tokens; one block of context for one sequence; with
    // opts.parallel.tp, pp or opts.experts.ep > 1 rank 0's graph of `stage` (its share of the
    // weights, its KV heads (a latent KV whole) and its layers' KV).
    graph::GraphOptions go;
    go.tp = opts.parallel.tp;
    go.ep = opts.experts.ep;
    go.pp = opts.parallel.pp;
    go.pp_stage = stage;
    const sim::Plan plan = go.tp * go.ep * go.pp > 1 ? sim::plan_generation(shape, step_tokens, 1, 1, go)
                                                     : sim::plan_generation(shape, step_tokens, 1, 1);
    const sim::Placer placer(opts.placement, hw);
    return sim::account_memory(shape, plan, hw.kv_block_tokens, 1, placer, opts, hw);
}
}  // namespace

nlohmann::json kv_capacity_json(const KvCapacity& c) {
    return {{"blocks", c.n_blocks},
            {"block_tokens", c.block_tokens},
            {"block_bytes", c.block_bytes},
            {"device_bytes", c.device_bytes},
            {"other_bytes", c.other_bytes}};
}

uint64_t kv_block_bytes(const graph::ModelShape& shape, const sim::RunOptions& opts, const sim::SimHardware& hw) {
    return one_block_memory(shape, opts, hw, 1).kv_cache_bytes;
}

uint64_t kv_rank_bytes_per_token(const graph::ModelShape& shape, const sim::RunOptions& opts,
                                 const sim::SimHardware& hw) {
    return kv_block_bytes(shape, opts, hw) / uint64_t(hw.kv_block_tokens);
}

KvCapacity kv_capacity(const graph::ModelShape& shape, const sim::RunOptions& opts, const sim::SimHardware& hw,
                       int64_t step_tokens) {
    KvCapacity c;
    c.device_bytes = hw.mem_capacity_bytes;
    c.block_tokens = hw.kv_block_tokens;
    if (c.device_bytes == 0)
        fail("the memory preset '{}' states no capacity, so the KV cache cannot be derived (allowed: --kv-blocks N)",
             hw.memory_name);
    const uint64_t tp = uint64_t(std::max(1, opts.parallel.tp)), ep = uint64_t(std::max(1, opts.experts.ep));
    const int pp = std::max(1, opts.parallel.pp);
    // Per rank: its NPU's memory, its share of the weights (the plan's), its KV heads (a latent
    // KV is whole on every rank); the figures below are those times the ranks. An EP rank holds
    // whole blocks of its own sequences: the pool is the ranks' blocks together. A pipeline
    // stage holds its layers' weights and its layers' part of every block: the pool has the
    // blocks of the stage with the least room.
    const uint64_t npus = std::max<uint64_t>(1, hw.devices_of(sim::DeviceKind::NPU).size());
    // data-parallel attention (ep / tp groups): each group its own sequences' blocks, split by KV
    // heads over the group's tp ranks as under tensor parallelism alone (tp == ep: one group)
    const uint64_t stage = uint64_t(graph::stage_ranks(int(tp), int(ep))), ranks = stage * uint64_t(pp);
    const uint64_t dp = uint64_t(graph::attention_dp(int(tp), int(ep)));
    const uint64_t rank_device = ranks > 1 ? c.device_bytes / std::max(npus, ranks) : c.device_bytes;  // ranks may share an NPU
    c.n_blocks = INT64_MAX;
    for (int s = 0; s < pp; ++s) {
        const sim::MemoryBreakdown m = one_block_memory(shape, opts, hw, step_tokens, s);
        const uint64_t rank_block = m.kv_cache_bytes;  // the rank's KV heads of the stage's layers
        const uint64_t rank_other = m.total_bytes() - m.kv_cache_bytes;
        DUET_CHECK(rank_block > 0);
        c.n_blocks = std::min(c.n_blocks, rank_device > rank_other ? int64_t((rank_device - rank_other) / rank_block * dp) : 0);
        c.block_bytes += rank_block * tp;
        c.other_bytes += rank_other * stage;
    }
    c.device_bytes = rank_device * ranks;
    return c;
}

}  // namespace duet::serving
