#include "layout/nz_format.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace duet::layout {

NzShape nz_shape(int64_t m, int64_t n, DType dtype) {
    NzShape s;
    switch (dtype) {
        case DType::F16:
        case DType::BF16: s.elem_bytes = 2; break;
        case DType::I8: s.elem_bytes = 1; break;
        case DType::F32: s.elem_bytes = 4; break;
        default: fail("FRACTAL_NZ: dtype {} has no fractal (allowed: f16, bf16, i8, f32)", dtype_name(dtype));
    }
    if (m < 1 || n < 1) fail("FRACTAL_NZ: matrix shape [{}][{}] is not allowed (allowed: at least 1x1)", m, n);
    s.m = m;
    s.n = n;
    s.m0 = kNzFractalRows;
    s.n0 = kNzFractalRowBytes / s.elem_bytes;
    s.m1 = (m + s.m0 - 1) / s.m0;
    s.n1 = (n + s.n0 - 1) / s.n0;
    return s;
}

std::vector<uint8_t> nd_to_nz(const void* nd, const NzShape& s) {
    const auto* src = static_cast<const uint8_t*>(nd);
    std::vector<uint8_t> nz(s.nz_bytes(), 0);
    const size_t e = size_t(s.elem_bytes);
    // Copy one fractal-row run (up to n0 contiguous elements) at a time.
    for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = 0; j < s.n; j += s.n0) {
            const int64_t run = std::min<int64_t>(s.n0, s.n - j);
            std::memcpy(nz.data() + nz_index(s, i, j) * e, src + (size_t(i) * size_t(s.n) + size_t(j)) * e,
                        size_t(run) * e);
        }
    return nz;
}

std::vector<uint8_t> nz_to_nd(const uint8_t* nz, uint64_t nz_size, const NzShape& s) {
    if (nz_size != s.nz_bytes())
        fail("nz_to_nd: buffer of {} bytes does not match NZ [{}][{}][{}] of {} bytes", nz_size, s.n1, s.m1 * s.m0,
             s.n0, s.nz_bytes());
    std::vector<uint8_t> nd(s.nd_bytes());
    const size_t e = size_t(s.elem_bytes);
    for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = 0; j < s.n; j += s.n0) {
            const int64_t run = std::min<int64_t>(s.n0, s.n - j);
            std::memcpy(nd.data() + (size_t(i) * size_t(s.n) + size_t(j)) * e, nz + nz_index(s, i, j) * e,
                        size_t(run) * e);
        }
    return nd;
}

}  // namespace duet::layout
