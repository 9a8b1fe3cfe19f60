#include "core/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"

// The quantisers below mirror ggml's reference quantisers step by step (same search for the
// scales, same rounding, same order of float operations) so that the bytes match. This file is
// compiled with -ffp-contract=off (src/core/CMakeLists.txt): fused multiply-adds would change
// the last bit of intermediate sums and hence, rarely, a chosen quant.
namespace duet::quant {
namespace {

constexpr float kGroupMaxEps = 1e-15f;

void check_row(DType type, int64_t n, const char* what) {
    if (!is_matmul_weight_dtype(type))
        fail("{}: dtype '{}' is not supported (allowed: {})", what, dtype_name(type), matmul_weight_dtype_names());
    const int be = dtype_info(type).block_elems;
    if (n < 0 || n % be != 0)
        fail("{}: row of {} elements is not a multiple of the {} block size {}", what, n, dtype_name(type), be);
}

// ---- Q8_0: 32 values, d = amax / 127 ----
void quantize_q8_0(const float* x, BlockQ8_0* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += kQK8_0) {
        float amax = 0.0f;
        for (int j = 0; j < kQK8_0; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        for (int j = 0; j < kQK8_0; ++j) y[i].qs[j] = int8_t(std::round(x[j] * id));  // half away from 0
    }
}

// The value of largest magnitude with its sign (the first one on ties), as ggml's Q4_0/Q5_0
// quantisers pick the scale from it.
float signed_absmax(const float* x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

// ---- Q4_0: 32 values, d = (signed value of largest magnitude) / -8, q in 0..15 ----
void quantize_q4_0(const float* x, BlockQ4_0* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += kQK4_0) {
        const float max = signed_absmax(x, kQK4_0);
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        for (int j = 0; j < kQK4_0 / 2; ++j) {
            // truncation toward zero of (v + 8.5) as ggml's (int8_t) cast; v >= -8 so it is >= 0.5
            const auto q0 = uint8_t(std::min(15, int(int8_t(x[j] * id + 8.5f))));
            const auto q1 = uint8_t(std::min(15, int(int8_t(x[j + 16] * id + 8.5f))));
            y[i].qs[j] = uint8_t(q0 | q1 << 4);
        }
    }
}

// ---- Q5_0: 32 values, d = (signed value of largest magnitude) / -16, q in 0..31; the low
// four bits go into nibbles as Q4_0's, the fifth bit of element e into bit e of qh ----
void quantize_q5_0(const float* x, BlockQ5_0* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += kQK5_0) {
        const float max = signed_absmax(x, kQK5_0);
        const float d = max / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        uint32_t qh = 0;
        for (int j = 0; j < kQK5_0 / 2; ++j) {
            // truncation toward zero of (v + 16.5) as ggml's (int8_t) cast; v >= -16 so it is >= 0.5
            const auto q0 = uint8_t(std::min(31, int(int8_t(x[j] * id + 16.5f))));
            const auto q1 = uint8_t(std::min(31, int(int8_t(x[j + 16] * id + 16.5f))));
            y[i].qs[j] = uint8_t((q0 & 0xF) | (q1 & 0xF) << 4);
            qh |= uint32_t(q0 >> 4) << j;
            qh |= uint32_t(q1 >> 4) << (j + 16);
        }
        for (int b = 0; b < 4; ++b) y[i].qh[b] = uint8_t(qh >> (8 * b));
    }
}

void dequantize_q5_0(const BlockQ5_0* b, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += kQK5_0) {
        const float d = fp16_to_fp32(b[i].d);
        const uint32_t qh =
            uint32_t(b[i].qh[0]) | uint32_t(b[i].qh[1]) << 8 | uint32_t(b[i].qh[2]) << 16 | uint32_t(b[i].qh[3]) << 24;
        for (int j = 0; j < kQK5_0 / 2; ++j) {
            const int q0 = (b[i].qs[j] & 0xF) | int((qh >> j) & 1) << 4;
            const int q1 = (b[i].qs[j] >> 4) | int((qh >> (j + 16)) & 1) << 4;
            y[j] = float(q0 - 16) * d;
            y[j + 16] = float(q1 - 16) * d;
        }
    }
}

// Weighted least-squares fit of x ~ scale * L + min with L in 0..nmax, trying nstep + 1
// candidate scales around nmax / (max - min) (ggml's make_qkx2_quants). Returns scale and
// stores -min (>= 0) in *neg_min.
float fit_scale_min(int n, int nmax, const float* x, const float* w, uint8_t* L, float* neg_min, float rmin,
                    float rdelta, int nstep) {
    float min = x[0], max = x[0];
    float sum_w = w[0], sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        min = std::min(min, x[i]);
        max = std::max(max, x[i]);
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        std::fill(L, L + n, uint8_t(0));
        *neg_min = -min;
        return 0.0f;
    }
    float iscale = float(nmax) / (max - min);
    float scale = 1.0f / iscale;
    float best_err = 0;
    for (int i = 0; i < n; ++i) {
        L[i] = uint8_t(std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax));
        const float diff = scale * L[i] + min - x[i];
        best_err += w[i] * (diff * diff);
    }
    uint8_t Laux[32];
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * float(is) + float(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = uint8_t(l);
            sum_l += w[i] * float(l);
            sum_l2 += w[i] * float(l) * float(l);
            sum_xl += w[i] * float(l) * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float err = 0;
            for (int i = 0; i < n; ++i) {
                const float diff = this_scale * Laux[i] + this_min - x[i];
                err += w[i] * (diff * diff);
            }
            if (err < best_err) {
                std::copy(Laux, Laux + n, L);
                best_err = err;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *neg_min = -min;
    return scale;
}

// ---- Q4_K: 8 sub-blocks of 32, x ~ d * sc_j * q - dmin * m_j, 6-bit sc_j and m_j ----
void quantize_q4_k(const float* x, BlockQ4_K* y, int64_t nb) {
    uint8_t L[kQK_K];
    float weights[32], mins[8], scales[8];
    for (int64_t i = 0; i < nb; ++i, x += kQK_K) {
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < 8; ++j) {
            const float* xs = x + 32 * j;
            float sum_x2 = 0;
            for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
            const float av_x = std::sqrt(sum_x2 / 32);
            for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
            scales[j] = fit_scale_min(32, 15, xs, weights, L + 32 * j, &mins[j], -1.0f, 0.1f, 20);
            max_scale = std::max(max_scale, scales[j]);
            max_min = std::max(max_min, mins[j]);
        }
        const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
        const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
        std::memset(y[i].scales, 0, sizeof(y[i].scales));
        for (int j = 0; j < 8; ++j) {
            // ggml stores nearest_int into a uint8_t before clamping to 63
            const auto ls = uint8_t(std::min<int>(63, uint8_t(nearest_int(inv_scale * scales[j]))));
            const auto lm = uint8_t(std::min<int>(63, uint8_t(nearest_int(inv_min * mins[j]))));
            q4k_set_scale_min(j, ls, lm, y[i].scales);
        }
        y[i].d = fp32_to_fp16(max_scale / 63.0f);
        y[i].dmin = fp32_to_fp16(max_min / 63.0f);
        for (int j = 0; j < 8; ++j) {
            uint8_t sc, m;
            q4k_get_scale_min(j, y[i].scales, &sc, &m);
            const float d = fp16_to_fp32(y[i].d) * sc;
            if (d == 0.0f) continue;
            const float dm = fp16_to_fp32(y[i].dmin) * m;
            for (int l = 0; l < 32; ++l)
                L[32 * j + l] = uint8_t(std::clamp(nearest_int((x[32 * j + l] + dm) / d), 0, 15));
        }
        // 64 values per 32 bytes: low nibbles hold sub-block 2c, high nibbles sub-block 2c + 1
        for (int c = 0; c < 4; ++c)
            for (int l = 0; l < 32; ++l) y[i].qs[32 * c + l] = uint8_t(L[64 * c + l] | L[64 * c + 32 + l] << 4);
    }
}

void dequantize_q4_k(const BlockQ4_K* b, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i) {
        const float d = fp16_to_fp32(b[i].d), dmin = fp16_to_fp32(b[i].dmin);
        for (int c = 0; c < 4; ++c) {
            uint8_t sc0, m0, sc1, m1;
            q4k_get_scale_min(2 * c, b[i].scales, &sc0, &m0);
            q4k_get_scale_min(2 * c + 1, b[i].scales, &sc1, &m1);
            const float d0 = d * sc0, mm0 = dmin * m0, d1 = d * sc1, mm1 = dmin * m1;
            const uint8_t* q = b[i].qs + 32 * c;
            for (int l = 0; l < 32; ++l) *y++ = d0 * float(q[l] & 0xF) - mm0;
            for (int l = 0; l < 32; ++l) *y++ = d1 * float(q[l] >> 4) - mm1;
        }
    }
}

// Symmetric fit x ~ scale * (L - nmax), L - nmax in -nmax..nmax-1, weights x^2, trying 19
// candidate scales (ggml's make_qx_quants with rmse_type 1). L receives L - nmax + nmax.
float fit_scale_symmetric(int n, int nmax, const float* x, int8_t* L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            max = x[i];
        }
    }
    if (amax < kGroupMaxEps) {
        std::fill(L, L + n, int8_t(0));
        return 0.0f;
    }
    auto q = [&](float iscale, int i) { return std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1); };
    float iscale = float(-nmax) / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = q(iscale, i);
        L[i] = int8_t(l + nmax);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * float(l);
        suml2 += w * float(l) * float(l);
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(float(nmax) + 0.1f * float(is)) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            const int l = q(iscale, i);
            const float w = x[i] * x[i];
            sumlx += w * x[i] * float(l);
            suml2 += w * float(l) * float(l);
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) L[i] = int8_t(nmax + q(iscale, i));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

// ---- Q6_K: 16 sub-blocks of 16, x ~ d * sc_j * (q - 32), int8 sc_j, 6-bit q ----
void quantize_q6_k(const float* x, BlockQ6_K* y, int64_t nb) {
    int8_t L[kQK_K];
    float scales[16];
    for (int64_t i = 0; i < nb; ++i, x += kQK_K) {
        float max_scale = 0, max_abs_scale = 0;
        for (int j = 0; j < 16; ++j) {
            scales[j] = fit_scale_symmetric(16, 32, x + 16 * j, L + 16 * j);
            if (std::fabs(scales[j]) > max_abs_scale) {
                max_abs_scale = std::fabs(scales[j]);
                max_scale = scales[j];
            }
        }
        if (max_abs_scale < kGroupMaxEps) {
            std::memset(&y[i], 0, sizeof(BlockQ6_K));
            continue;
        }
        const float iscale = -128.0f / max_scale;
        y[i].d = fp32_to_fp16(1.0f / iscale);
        for (int j = 0; j < 16; ++j) y[i].scales[j] = int8_t(std::min(127, nearest_int(iscale * scales[j])));
        for (int j = 0; j < 16; ++j) {
            const float d = fp16_to_fp32(y[i].d) * float(y[i].scales[j]);
            if (d == 0.0f) continue;
            for (int l = 0; l < 16; ++l)
                L[16 * j + l] = int8_t(std::clamp(nearest_int(x[16 * j + l] / d), -32, 31) + 32);
        }
        // Per half (128 values): ql[l] low/high nibble = values l / l+64, ql[l+32] = l+32 / l+96;
        // qh[l] holds the top two bits of values l, l+32, l+64, l+96 at bits 0, 2, 4, 6.
        for (int h = 0; h < 2; ++h) {
            const int8_t* Lh = L + 128 * h;
            uint8_t* ql = y[i].ql + 64 * h;
            uint8_t* qh = y[i].qh + 32 * h;
            for (int l = 0; l < 32; ++l) {
                ql[l] = uint8_t((Lh[l] & 0xF) | (Lh[l + 64] & 0xF) << 4);
                ql[l + 32] = uint8_t((Lh[l + 32] & 0xF) | (Lh[l + 96] & 0xF) << 4);
                qh[l] =
                    uint8_t((Lh[l] >> 4) | (Lh[l + 32] >> 4) << 2 | (Lh[l + 64] >> 4) << 4 | (Lh[l + 96] >> 4) << 6);
            }
        }
    }
}

void dequantize_q6_k(const BlockQ6_K* b, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i) {
        const float d = fp16_to_fp32(b[i].d);
        for (int h = 0; h < 2; ++h, y += 128) {
            const uint8_t* ql = b[i].ql + 64 * h;
            const uint8_t* qh = b[i].qh + 32 * h;
            const int8_t* sc = b[i].scales + 8 * h;
            for (int l = 0; l < 32; ++l) {
                const int s = l / 16;
                const int q0 = ((ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4) - 32;
                const int q1 = ((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32;
                const int q2 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
                const int q3 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
                y[l] = d * float(sc[s]) * float(q0);
                y[l + 32] = d * float(sc[s + 2]) * float(q1);
                y[l + 64] = d * float(sc[s + 4]) * float(q2);
                y[l + 96] = d * float(sc[s + 6]) * float(q3);
            }
        }
    }
}

}  // namespace

int nearest_int(float v) { return int(std::nearbyint(v)); }

void q4k_get_scale_min(int j, const uint8_t* q, uint8_t* scale, uint8_t* min) {
    if (j < 4) {
        *scale = q[j] & 63;
        *min = q[j + 4] & 63;
    } else {
        *scale = uint8_t((q[j + 4] & 0xF) | (q[j - 4] >> 6) << 4);
        *min = uint8_t((q[j + 4] >> 4) | (q[j] >> 6) << 4);
    }
}

void q4k_set_scale_min(int j, uint8_t scale, uint8_t min, uint8_t* q) {
    if (j < 4) {
        q[j] = uint8_t((q[j] & 0xC0) | (scale & 63));
        q[j + 4] = uint8_t((q[j + 4] & 0xC0) | (min & 63));
    } else {
        q[j + 4] = uint8_t((scale & 0xF) | (min & 0xF) << 4);
        q[j - 4] = uint8_t((q[j - 4] & 0x3F) | (scale >> 4) << 6);
        q[j] = uint8_t((q[j] & 0x3F) | (min >> 4) << 6);
    }
}

void quantize_row(const float* src, DType type, void* dst, int64_t n) {
    check_row(type, n, "quantize_row");
    const int64_t nb = n / dtype_info(type).block_elems;
    switch (type) {
        case DType::F32:
            std::memcpy(dst, src, size_t(n) * 4);
            break;
        case DType::F16: {
            auto* d = static_cast<uint16_t*>(dst);
            for (int64_t i = 0; i < n; ++i) d[i] = fp32_to_fp16(src[i]);
            break;
        }
        case DType::BF16: {
            auto* d = static_cast<uint16_t*>(dst);
            for (int64_t i = 0; i < n; ++i) d[i] = fp32_to_bf16(src[i]);
            break;
        }
        case DType::Q8_0:
            quantize_q8_0(src, static_cast<BlockQ8_0*>(dst), nb);
            break;
        case DType::Q4_0:
            quantize_q4_0(src, static_cast<BlockQ4_0*>(dst), nb);
            break;
        case DType::Q5_0:
            quantize_q5_0(src, static_cast<BlockQ5_0*>(dst), nb);
            break;
        case DType::Q4_K:
            quantize_q4_k(src, static_cast<BlockQ4_K*>(dst), nb);
            break;
        case DType::Q6_K:
            quantize_q6_k(src, static_cast<BlockQ6_K*>(dst), nb);
            break;
        default:
            break;  // rejected by check_row
    }
}

void dequantize_row(const void* src, DType type, float* dst, int64_t n) {
    check_row(type, n, "dequantize_row");
    const int64_t nb = n / dtype_info(type).block_elems;
    switch (type) {
        case DType::F32:
            std::memcpy(dst, src, size_t(n) * 4);
            break;
        case DType::F16: {
            const auto* s = static_cast<const uint16_t*>(src);
            for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(s[i]);
            break;
        }
        case DType::BF16: {
            const auto* s = static_cast<const uint16_t*>(src);
            for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(s[i]);
            break;
        }
        case DType::Q8_0: {
            const auto* b = static_cast<const BlockQ8_0*>(src);
            for (int64_t i = 0; i < nb; ++i) {
                const float d = fp16_to_fp32(b[i].d);
                for (int j = 0; j < kQK8_0; ++j) dst[i * kQK8_0 + j] = d * float(b[i].qs[j]);
            }
            break;
        }
        case DType::Q4_0: {
            const auto* b = static_cast<const BlockQ4_0*>(src);
            for (int64_t i = 0; i < nb; ++i) {
                const float d = fp16_to_fp32(b[i].d);
                for (int j = 0; j < 16; ++j) {
                    dst[i * 32 + j] = float((b[i].qs[j] & 0xF) - 8) * d;
                    dst[i * 32 + j + 16] = float((b[i].qs[j] >> 4) - 8) * d;
                }
            }
            break;
        }
        case DType::Q5_0:
            dequantize_q5_0(static_cast<const BlockQ5_0*>(src), dst, nb);
            break;
        case DType::Q4_K:
            dequantize_q4_k(static_cast<const BlockQ4_K*>(src), dst, nb);
            break;
        case DType::Q6_K:
            dequantize_q6_k(static_cast<const BlockQ6_K*>(src), dst, nb);
            break;
        default:
            break;
    }
}

void quantize_row_q8_K(const float* x, BlockQ8_K* y, int64_t n) {
    if (n < 0 || n % kQK_K != 0) fail("quantize_row_q8_K: row of {} elements is not a multiple of 256", n);
    for (int64_t i = 0; i < n / kQK_K; ++i, x += kQK_K) {
        float max = 0, amax = 0;
        for (int j = 0; j < kQK_K; ++j) {
            if (std::fabs(x[j]) > amax) {
                amax = std::fabs(x[j]);
                max = x[j];
            }
        }
        if (amax == 0.0f) {
            std::memset(&y[i], 0, sizeof(BlockQ8_K));
            continue;
        }
        const float iscale = -127.0f / max;
        for (int j = 0; j < kQK_K; ++j) y[i].qs[j] = int8_t(std::min(127, nearest_int(iscale * x[j])));
        for (int j = 0; j < kQK_K / 16; ++j) {
            int sum = 0;
            for (int l = 0; l < 16; ++l) sum += y[i].qs[16 * j + l];
            y[i].bsums[j] = int16_t(sum);
        }
        y[i].d = 1.0f / iscale;
    }
}

}  // namespace duet::quant
