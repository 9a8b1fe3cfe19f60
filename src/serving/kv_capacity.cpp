#include "serving/kv_capacity.h"

#include "core/error.h"
#include "sim/memory_accounting.h"
#include "sim/placement.h"
#include "sim/planner.h"

namespace duet::serving {

namespace {
sim::MemoryBreakdown one_block_memory(const graph::ModelShape& shape, const sim::RunOptions& opts,
                                      const sim::SimHardware& hw, int64_t step_tokens) {
    // One step of step_tokens prompt tokens; one block of context for one sequence.
    const sim::Plan plan = sim::plan_generation(shape, step_tokens, 1, 1);
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

KvCapacity kv_capacity(const graph::ModelShape& shape, const sim::RunOptions& opts, const sim::SimHardware& hw,
                       int64_t step_tokens) {
    KvCapacity c;
    c.device_bytes = hw.mem_capacity_bytes;
    c.block_tokens = hw.kv_block_tokens;
    if (c.device_bytes == 0)
        fail("the memory preset '{}' states no capacity, so the KV cache cannot be derived (allowed: --kv-blocks N)",
             hw.memory_name);
    const sim::MemoryBreakdown m = one_block_memory(shape, opts, hw, step_tokens);
    c.block_bytes = m.kv_cache_bytes;
    c.other_bytes = m.total_bytes() - m.kv_cache_bytes;
    DUET_CHECK(c.block_bytes > 0);
    c.n_blocks = c.device_bytes > c.other_bytes ? int64_t((c.device_bytes - c.other_bytes) / c.block_bytes) : 0;
    return c;
}

}  // namespace duet::serving
