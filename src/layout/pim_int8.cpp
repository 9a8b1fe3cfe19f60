#include "layout/pim_int8.h"

#include <cstring>

#include "core/dtype.h"
#include "core/error.h"

namespace duet::layout {

Int8Split split_q8_0(const void* rows, size_t row_stride_bytes, int64_t n, int64_t k) {
    if (n < 0 || k <= 0 || k % kQK8_0 != 0)
        fail("split_q8_0: shape [{}][{}] (allowed: k a positive multiple of {})", n, k, kQK8_0);
    const int64_t nb = k / kQK8_0;
    Int8Split s;
    s.quants.resize(size_t(n * k));
    s.scales.resize(size_t(n * nb));
    for (int64_t r = 0; r < n; ++r) {
        const auto* row = static_cast<const uint8_t*>(rows) + size_t(r) * row_stride_bytes;
        for (int64_t b = 0; b < nb; ++b) {
            BlockQ8_0 blk;
            std::memcpy(&blk, row + size_t(b) * sizeof(BlockQ8_0), sizeof blk);
            s.scales[size_t(r * nb + b)] = blk.d;
            std::memcpy(&s.quants[size_t(r * k + b * kQK8_0)], blk.qs, kQK8_0);
        }
    }
    return s;
}

std::vector<uint8_t> join_q8_0(const int8_t* quants, const uint16_t* scales, int64_t n, int64_t k) {
    if (n < 0 || k <= 0 || k % kQK8_0 != 0)
        fail("join_q8_0: shape [{}][{}] (allowed: k a positive multiple of {})", n, k, kQK8_0);
    const int64_t nb = k / kQK8_0;
    std::vector<uint8_t> out(size_t(n * nb) * sizeof(BlockQ8_0));
    for (int64_t r = 0; r < n; ++r)
        for (int64_t b = 0; b < nb; ++b) {
            BlockQ8_0 blk;
            blk.d = scales[size_t(r * nb + b)];
            std::memcpy(blk.qs, quants + size_t(r * k + b * kQK8_0), kQK8_0);
            std::memcpy(&out[size_t(r * nb + b) * sizeof blk], &blk, sizeof blk);
        }
    return out;
}

}  // namespace duet::layout
