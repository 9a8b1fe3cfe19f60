#pragma once
// A real software prefetch of each layer's gate/up weights before the layer's attention runs
// (VLLM_ASCEND_ENABLE_PREFETCH_MLP on the engine; config/runtime_knobs.h). vllm-ascend
// prefetches the MLP weights into the NPU's L2 on a side stream while attention computes;
// the host analogue is a prefetch hint (__builtin_prefetch, one per 64-byte line) for the first
// `budget_bytes` of the gate rows then the up rows (or the fused gate/up matrix), issued just
// before the attention kernel, so the lines the MLP matmuls read first are on their way to the
// cache while attention works on the KV blocks. Hints never change results.
//
// Budget: the host's per-core L2 cache (sysconf _SC_LEVEL2_CACHE_SIZE): prefetching more than
// the cache holds would evict the first lines before use. When the system does not report it,
// 1 MiB (no source: a common per-core L2 size of current x86 server cores).
//
// Ownership: holds pointers into the model's weights (which outlive the engine).
// Thread safety: none; called by the engine's thread.
#include <cstdint>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "runtime/weight_source.h"

namespace duet::runtime {

class MlpPrefetch {
public:
    MlpPrefetch(const graph::Graph& g, const PlainWeightSource& w, uint64_t budget_bytes);

    // Hints layer `layer`'s gate/up weights (up to the budget); returns the bytes hinted.
    uint64_t issue(int32_t layer);
    uint64_t bytes_issued() const { return issued_; }  // over every issue() so far
    uint64_t budget_bytes() const { return budget_; }
    // Bytes issue(layer) hints: min(budget, the layer's gate/up bytes).
    uint64_t bytes_for(int32_t layer) const;

    static uint64_t host_l2_bytes();

private:
    using Range = std::pair<const uint8_t*, uint64_t>;
    std::vector<std::vector<Range>> layers_;  // [n_layer]: gate then up (or the fused matrix)
    uint64_t budget_ = 0, issued_ = 0;
};

}  // namespace duet::runtime
