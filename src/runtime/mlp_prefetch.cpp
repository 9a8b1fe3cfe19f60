#include "runtime/mlp_prefetch.h"

#include <unistd.h>

#include <algorithm>

#include "graph/tensor_catalogue.h"

namespace duet::runtime {

namespace {
constexpr uint64_t kLineBytes = 64;  // x86-64 and AArch64 cache line
}

MlpPrefetch::MlpPrefetch(const graph::Graph& g, const PlainWeightSource& w, uint64_t budget_bytes)
    : budget_(budget_bytes) {
    for (const graph::Node& n : g.nodes) {
        if (n.kind != graph::OpKind::MATMUL || n.layer < 0) continue;
        if (!graph::ffn_input_matmul(n.role)) continue;
        if (size_t(n.layer) >= layers_.size()) layers_.resize(size_t(n.layer) + 1);
        const model::TensorRef& t = w.tensor(n.role, n.layer);
        layers_[size_t(n.layer)].push_back({static_cast<const uint8_t*>(t.data), t.n_bytes()});
    }
}

uint64_t MlpPrefetch::bytes_for(int32_t layer) const {
    if (layer < 0 || size_t(layer) >= layers_.size()) return 0;
    uint64_t sum = 0;
    for (const Range& r : layers_[size_t(layer)]) sum += r.second;
    return std::min(sum, budget_);
}

uint64_t MlpPrefetch::issue(int32_t layer) {
    if (layer < 0 || size_t(layer) >= layers_.size()) return 0;
    uint64_t left = budget_;
    for (const auto& [p, n] : layers_[size_t(layer)]) {
        const uint64_t take = std::min(n, left);
        for (uint64_t off = 0; off < take; off += kLineBytes) __builtin_prefetch(p + off, 0, 3);
        left -= take;
        if (left == 0) break;
    }
    issued_ += budget_ - left;
    return budget_ - left;
}

uint64_t MlpPrefetch::host_l2_bytes() {
#ifdef _SC_LEVEL2_CACHE_SIZE
    const long l2 = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (l2 > 0) return uint64_t(l2);
#endif
    return uint64_t(1) << 20;
}

}  // namespace duet::runtime
