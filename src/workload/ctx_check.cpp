#include "workload/ctx_check.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "core/log.h"

namespace duet::workload {
namespace {

std::string gib(uint64_t bytes) { return fmt::format("{:.1f} GiB", double(bytes) / double(1ull << 30)); }

}  // namespace

uint64_t kv_cache_bytes(const model::Hparams& hp, int64_t n_ctx, int64_t n_seq, DType kv_type) {
    const DTypeInfo& t = dtype_info(kv_type);  // whole blocks per row (int8: 34 bytes per 32 values)
    const int64_t blocks = (hp.n_head_kv * hp.head_dim + t.block_elems - 1) / t.block_elems;
    const long double per_position = 2.0L * double(hp.n_layer) * double(blocks) * double(t.block_bytes);
    const long double total = per_position * double(n_ctx) * double(n_seq);
    return total >= 1.8e19L ? UINT64_MAX : uint64_t(total);
}

DType kv_type_from_flag(const std::string& text) {
    if (text == "int8") return DType::Q8_0;
    if (text == "f32") return DType::F32;
    if (text == "f16") return DType::F16;
    fail("--kv-type '{}' is not supported (allowed: f32, f16, int8)", text);
}

void check_ctx(const model::Hparams& hp, int64_t n_ctx, int64_t n_seq, DType kv_type, const std::string& flag,
               uint64_t available_bytes) {
    // The engine's default (0): min(trained context, 4096), see runtime/engine.h.
    const int64_t ctx = n_ctx > 0 ? n_ctx : std::min<int64_t>(hp.n_ctx_train > 0 ? hp.n_ctx_train : 4096, 4096);
    const uint64_t need = kv_cache_bytes(hp, ctx, n_seq, kv_type);
    if (available_bytes > 0 && need > available_bytes) {
        const uint64_t per_ctx = std::max<uint64_t>(1, kv_cache_bytes(hp, 1, n_seq, kv_type));
        const uint64_t max_ctx = available_bytes / per_ctx;
        fail("{} {} needs a KV cache of {} ({} sequence(s), {} layers, {} KV heads of {}, {}) but {} of memory is "
             "available (allowed: 1 to {} for this model on this machine)",
             flag, ctx, gib(need), n_seq, hp.n_layer, hp.n_head_kv, hp.head_dim, dtype_name(kv_type),
             gib(available_bytes), max_ctx);
    }
    if (hp.n_ctx_train > 0 && ctx > hp.n_ctx_train)
        DUET_LOG_WARN("{} {} is past the model's trained context of {} tokens: positions beyond it were never "
                      "trained and the output may degrade",
                      flag, ctx, hp.n_ctx_train);
}

void check_kv_blocks(const model::Hparams& hp, int64_t n_blocks, DType kv_type, uint64_t available_bytes) {
    constexpr int64_t kBlockTokens = 16;  // runtime/kv_cache.h
    const uint64_t per_block = kv_cache_bytes(hp, kBlockTokens, 1, kv_type);
    const long double need = (long double)per_block * (long double)n_blocks;
    if (available_bytes > 0 && need > (long double)available_bytes)
        fail("--kv-blocks {} needs a KV cache of {} ({} blocks x {} bytes: 16 positions x {} layers x K and V) but {} "
             "of memory is available (allowed: --kv-blocks at most {})",
             n_blocks, gib(uint64_t(std::min<long double>(need, 1.8e19L))), n_blocks, per_block, hp.n_layer,
             gib(available_bytes), available_bytes / std::max<uint64_t>(1, per_block));
}

}  // namespace duet::workload
