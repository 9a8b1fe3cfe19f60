#pragma once
// The context size a command asks for (--ctx), checked against the model and this machine
// *before* the KV cache is allocated: a context the memory cannot hold is a usage error naming
// the flag, the bytes it needs and the largest context that fits; a context past the model's
// trained length is allowed with a warning (positions it never saw: quality may drop).
#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "model/hparams.h"

namespace duet::workload {

// KV cache bytes of n_seq sequences of n_ctx positions: 2 (K and V) x layers x positions x
// n_head_kv x head_dim x element size.
uint64_t kv_cache_bytes(const model::Hparams& hp, int64_t n_ctx, int64_t n_seq, DType kv_type);

// --kv-type: f32, f16, or int8 (the KV cache in blocks of 32 int8 values with one f16 scale, ggml's
// Q8_0 layout: runtime/kv_cache.h). Throws duet::Error naming the flag and the allowed values.
DType kv_type_from_flag(const std::string& text);

// Throws duet::Error when n_ctx (0: the engine's default, checked as that) needs more KV memory
// than available_bytes (0: no memory check); warns past hp.n_ctx_train. `flag` names the option.
void check_ctx(const model::Hparams& hp, int64_t n_ctx, int64_t n_seq, DType kv_type, const std::string& flag,
               uint64_t available_bytes);

// --kv-blocks N (blocks of 16 positions): throws duet::Error with the arithmetic when the pool
// needs more than available_bytes (0: no check).
void check_kv_blocks(const model::Hparams& hp, int64_t n_blocks, DType kv_type, uint64_t available_bytes);

}  // namespace duet::workload
