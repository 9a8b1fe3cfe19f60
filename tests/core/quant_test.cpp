#include "core/quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/error.h"

namespace duet::quant {
namespace {

std::vector<float> gaussian(int64_t n, uint32_t seed, float sigma = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, sigma);
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = dist(rng);
    return v;
}

std::vector<float> round_trip(const std::vector<float>& x, DType t) {
    std::vector<uint8_t> q(row_bytes(t, int64_t(x.size())));
    quantize_row(x.data(), t, q.data(), int64_t(x.size()));
    std::vector<float> y(x.size());
    dequantize_row(q.data(), t, y.data(), int64_t(x.size()));
    return y;
}

double rms(const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += double(a[i] - b[i]) * double(a[i] - b[i]);
    return std::sqrt(s / double(a.size()));
}

TEST(Quant, PlainTypesRoundTripWithinTheirPrecision) {
    const auto x = gaussian(1000, 1);
    EXPECT_EQ(round_trip(x, DType::F32), x);
    const auto h = round_trip(x, DType::F16);
    const auto b = round_trip(x, DType::BF16);
    for (size_t i = 0; i < x.size(); ++i) {
        // round to nearest: half a unit in the last place, 2^-11 (f16) and 2^-8 (bf16) relative
        if (std::fabs(x[i]) > 1e-4f) {  // f16 normal range
            EXPECT_LE(std::fabs(h[i] - x[i]), std::ldexp(std::fabs(x[i]), -11));
        }
        EXPECT_LE(std::fabs(b[i] - x[i]), std::ldexp(std::fabs(x[i]), -8));
    }
}

TEST(Quant, Q8_0ExactOnAHandComputedBlock) {
    // amax 127 makes d = 1 exactly, so quants are round(x) with halves away from zero.
    std::vector<float> x(32, 0.0f);
    x[0] = -127.0f;
    x[1] = 2.5f;
    x[2] = -2.5f;
    x[3] = 0.49f;
    x[4] = 100.2f;
    x[31] = 126.6f;
    BlockQ8_0 b;
    quantize_row(x.data(), DType::Q8_0, &b, 32);
    EXPECT_EQ(b.d, 0x3c00);
    const int expect[] = {-127, 3, -3, 0, 100};
    for (int i = 0; i < 5; ++i) EXPECT_EQ(b.qs[i], expect[i]) << i;
    EXPECT_EQ(b.qs[31], 127);
    float y[32];
    dequantize_row(&b, DType::Q8_0, y, 32);
    EXPECT_EQ(y[1], 3.0f);
    EXPECT_EQ(y[31], 127.0f);
}

TEST(Quant, Q4_0ExactOnAHandComputedBlock) {
    // largest magnitude -8 gives d = 1; q = min(15, trunc(x + 8.5)); element j pairs with j + 16.
    std::vector<float> x(32, 0.0f);
    x[0] = -8.0f;
    x[1] = 7.0f;
    x[2] = 7.6f;
    x[3] = 0.49f;
    x[4] = 0.5f;
    x[16] = -3.2f;
    x[17] = 1.0f;
    BlockQ4_0 b;
    quantize_row(x.data(), DType::Q4_0, &b, 32);
    EXPECT_EQ(b.d, 0x3c00);
    EXPECT_EQ(b.qs[0], 0 | 5 << 4);  // -8 -> 0, -3.2 -> trunc(5.3) = 5
    EXPECT_EQ(b.qs[1], 15 | 9 << 4);
    EXPECT_EQ(b.qs[2], 15 | 8 << 4);  // 7.6 clips to 15
    EXPECT_EQ(b.qs[3], 8 | 8 << 4);
    EXPECT_EQ(b.qs[4], 9 | 8 << 4);
    float y[32];
    dequantize_row(&b, DType::Q4_0, y, 32);
    EXPECT_EQ(y[0], -8.0f);
    EXPECT_EQ(y[2], 7.0f);
    EXPECT_EQ(y[16], -3.0f);
}

TEST(Quant, Q5_0ExactOnAHandComputedBlock) {
    // largest magnitude -16 gives d = 1; q = min(31, trunc(x + 16.5)); element j pairs with
    // j + 16 in qs[j] (low, high nibble); bit e of qh is the fifth bit of element e.
    std::vector<float> x(32, 0.0f);  // zeros quantise to 16: nibble 0, fifth bit set
    x[0] = -16.0f;                   // 0
    x[1] = 15.0f;                    // 31
    x[2] = 15.6f;                    // trunc(32.1) = 32 clips to 31
    x[3] = 0.49f;                    // trunc(16.99) = 16
    x[4] = -0.6f;                    // trunc(15.9) = 15: no fifth bit
    x[16] = -3.2f;                   // trunc(13.3) = 13
    x[17] = 1.0f;                    // 17
    x[31] = 7.0f;                    // 23
    BlockQ5_0 b;
    quantize_row(x.data(), DType::Q5_0, &b, 32);
    EXPECT_EQ(b.d, 0x3c00);
    // fifth bits: every element but 0 (q 0), 4 (q 15) and 16 (q 13) -> 0xFFFEFFEE little-endian
    EXPECT_EQ(b.qh[0], 0xEE);
    EXPECT_EQ(b.qh[1], 0xFF);
    EXPECT_EQ(b.qh[2], 0xFE);
    EXPECT_EQ(b.qh[3], 0xFF);
    EXPECT_EQ(b.qs[0], 0x0 | 0xD << 4);
    EXPECT_EQ(b.qs[1], 0xF | 0x1 << 4);
    EXPECT_EQ(b.qs[2], 0xF | 0x0 << 4);
    EXPECT_EQ(b.qs[3], 0x00);
    EXPECT_EQ(b.qs[4], 0x0F);
    EXPECT_EQ(b.qs[15], 0x0 | 0x7 << 4);
    float y[32];
    dequantize_row(&b, DType::Q5_0, y, 32);
    const float expect[32] = {-16, 15, 15, 0, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                              -3,  1,  0,  0, 0,  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7};
    for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], expect[i]) << i;
}

TEST(Quant, Q5_0DecodesAHandBuiltBlockByTheFormula) {
    // value e = d * (q_e - 16), q_e = nibble | ((qh >> e) & 1) << 4, d = -0.375 (exact in f16)
    BlockQ5_0 b{};
    b.d = fp32_to_fp16(-0.375f);
    auto q_of = [](int e) { return (e * 13 + 7) % 32; };
    uint32_t qh = 0;
    for (int e = 0; e < 32; ++e) {
        b.qs[e % 16] |= uint8_t((q_of(e) & 15) << (e < 16 ? 0 : 4));
        qh |= uint32_t(q_of(e) >> 4) << e;
    }
    std::memcpy(b.qh, &qh, 4);  // the block stores qh little-endian, as x86 does
    float y[32];
    dequantize_row(&b, DType::Q5_0, y, 32);
    for (int e = 0; e < 32; ++e) ASSERT_EQ(y[e], -0.375f * float(q_of(e) - 16)) << e;
}

TEST(Quant, Q5_0ErrorsStayWithinOneStep) {
    const auto x = gaussian(32 * 64, 6, 3.0f);
    const auto y = round_trip(x, DType::Q5_0);
    for (size_t blk = 0; blk < x.size() / 32; ++blk) {
        float amax = 0;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[blk * 32 + j]));
        // step d = amax/16; the side opposite the extreme can reach +16 steps and is clipped to
        // +15 (one step); elsewhere half a step; plus 16 steps of f16 error in d.
        const float d = amax / 16.0f, bound = d * (1.0f + 16.0f / 2048.0f) * 1.0001f;
        for (int j = 0; j < 32; ++j) {
            const size_t i = blk * 32 + j;
            ASSERT_LE(std::fabs(y[i] - x[i]), bound) << i;
        }
    }
    // Uniform rounding error of step amax/16 has rms step/sqrt(12), 0.018 amax; amax of 32
    // Gaussians is ~2.5 sigma, so ~0.045 sigma. A lost fifth bit moves half the values by
    // 16 steps and fails the upper bound; a test of nothing fails the lower one.
    const double e = rms(x, y) / 3.0;
    EXPECT_LT(e, 0.07);
    EXPECT_GT(e, 0.01);
}

TEST(Quant, Q4_KDecodesAHandBuiltBlockByTheFormula) {
    // y = d * sc_j * q - dmin * m_j for sub-block j = i / 32; scales and mins 6-bit, packed as
    // bytes 0-3: sc0-3 | (sc4-7 >> 4) << 6, bytes 4-7: m0-3 | (m4-7 >> 4) << 6,
    // bytes 8-11: (sc4-7 & 15) | (m4-7 & 15) << 4. Quants: 32 bytes per pair of sub-blocks,
    // low nibble = sub-block 2c, high nibble = sub-block 2c + 1.
    const int sc[8] = {1, 7, 20, 63, 17, 33, 48, 62};
    const int m[8] = {0, 63, 5, 31, 16, 47, 2, 61};
    BlockQ4_K b{};
    b.d = fp32_to_fp16(0.5f);
    b.dmin = fp32_to_fp16(0.25f);
    for (int j = 0; j < 4; ++j) {
        b.scales[j] = uint8_t(sc[j] | (sc[j + 4] >> 4) << 6);
        b.scales[j + 4] = uint8_t(m[j] | (m[j + 4] >> 4) << 6);
        b.scales[j + 8] = uint8_t((sc[j + 4] & 15) | (m[j + 4] & 15) << 4);
    }
    auto q_of = [](int i) { return (i * 7 + i / 32) % 16; };
    for (int i = 0; i < 256; ++i) {
        const int c = i / 64, l = i % 32, high = (i / 32) % 2;
        b.qs[32 * c + l] |= uint8_t(q_of(i) << (4 * high));
    }
    float y[256];
    dequantize_row(&b, DType::Q4_K, y, 256);
    for (int i = 0; i < 256; ++i)
        ASSERT_FLOAT_EQ(y[i], 0.5f * float(sc[i / 32] * q_of(i)) - 0.25f * float(m[i / 32])) << i;
    for (int j = 0; j < 8; ++j) {
        uint8_t s, mm;
        q4k_get_scale_min(j, b.scales, &s, &mm);
        EXPECT_EQ(s, sc[j]);
        EXPECT_EQ(mm, m[j]);
    }
    uint8_t packed[12] = {};
    for (int k = 0; k < 8; ++k) q4k_set_scale_min(7 - k, uint8_t(sc[7 - k]), uint8_t(m[7 - k]), packed);
    EXPECT_EQ(std::memcmp(packed, b.scales, 12), 0);  // set in any order gives the same bytes
}

TEST(Quant, Q6_KDecodesAHandBuiltBlockByTheFormula) {
    // y = d * scales[i / 16] * (q - 32), q 6-bit. Per 128-value half, position p = 32 g + l:
    // low 4 bits in ql[l] (g 0: low nibble, g 2: high) or ql[l + 32] (g 1 low, g 3 high);
    // top 2 bits in qh[l] at bit 2 g.
    BlockQ6_K b{};
    b.d = fp32_to_fp16(0.25f);
    for (int j = 0; j < 16; ++j) b.scales[j] = int8_t(j * 9 - 70);
    auto q_of = [](int i) { return (i * 11 + 5) % 64; };
    for (int i = 0; i < 256; ++i) {
        const int h = i / 128, p = i % 128, g = p / 32, l = p % 32;
        const int q = q_of(i);
        uint8_t* ql = b.ql + 64 * h + l + (g % 2) * 32;
        *ql |= uint8_t((q & 15) << (g >= 2 ? 4 : 0));
        b.qh[32 * h + l] |= uint8_t((q >> 4) << (2 * g));
    }
    float y[256];
    dequantize_row(&b, DType::Q6_K, y, 256);
    for (int i = 0; i < 256; ++i) ASSERT_FLOAT_EQ(y[i], 0.25f * float(b.scales[i / 16] * (q_of(i) - 32))) << i;
}

TEST(Quant, Q8_0AndQ4_0ErrorsStayWithinHalfAStep) {
    const auto x = gaussian(32 * 64, 2, 3.0f);
    const auto y8 = round_trip(x, DType::Q8_0);
    const auto y4 = round_trip(x, DType::Q4_0);
    for (size_t blk = 0; blk < x.size() / 32; ++blk) {
        float amax = 0;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[blk * 32 + j]));
        // q8_0: step d = amax/127, rounding error d/2, plus the f16 rounding of d (2^-11
        // relative) times at most 127 steps.
        const float d8 = amax / 127.0f, b8 = d8 * (0.5f + 127.0f / 2048.0f) * 1.0001f;
        // q4_0: step d = amax/8; the side opposite the extreme can reach +8 steps and is clipped
        // to +7, so the error is at most one step, plus 8 steps of f16 error in d.
        const float d4 = amax / 8.0f, b4 = d4 * (1.0f + 8.0f / 2048.0f) * 1.0001f;
        for (int j = 0; j < 32; ++j) {
            const size_t i = blk * 32 + j;
            ASSERT_LE(std::fabs(y8[i] - x[i]), b8) << i;
            ASSERT_LE(std::fabs(y4[i] - x[i]), b4) << i;
        }
    }
    // Uniform rounding error has rms step/sqrt(12): about 0.0068 and 0.11 of the amax/3sigma.
    EXPECT_LT(rms(x, y8), 0.01 * 3.0);
    EXPECT_LT(rms(x, y4), 0.15 * 3.0);
}

TEST(Quant, Q8_0Q4_0AndQ5_0AreIdempotent) {
    // A decoded row is exactly representable: quantising it again gives the same bytes.
    for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q5_0}) {
        const auto x = gaussian(256, 3);
        std::vector<uint8_t> q1(row_bytes(t, 256)), q2(q1.size());
        quantize_row(x.data(), t, q1.data(), 256);
        std::vector<float> y(256);
        dequantize_row(q1.data(), t, y.data(), 256);
        quantize_row(y.data(), t, q2.data(), 256);
        EXPECT_EQ(q1, q2) << dtype_name(t);
    }
}

TEST(Quant, KQuantsErrorMatchesTheirResolution) {
    const auto x = gaussian(256 * 32, 4, 2.0f);
    // Q4_K: 16 levels over a 32-value sub-block's range (about 4.1 sigma for Gaussian data),
    // step ~0.27 sigma, uniform rounding rms ~0.08 sigma; the fitted scale/min does slightly
    // better. Q6_K: 64 levels over +-amax of 16 values (~1.8 sigma), step ~0.057 sigma, rms ~0.017.
    const double e4 = rms(x, round_trip(x, DType::Q4_K)) / 2.0;
    const double e6 = rms(x, round_trip(x, DType::Q6_K)) / 2.0;
    EXPECT_LT(e4, 0.09);
    EXPECT_GT(e4, 0.02);  // a 4-bit code cannot be much better: catches a test of nothing
    EXPECT_LT(e6, 0.022);
    EXPECT_GT(e6, 0.005);
    // Every Q6_K value lies within one step d*|sc| of the input (half a step plus scale rounding).
    std::vector<BlockQ6_K> q(32);
    quantize_row(x.data(), DType::Q6_K, q.data(), int64_t(x.size()));
    std::vector<float> y(x.size());
    dequantize_row(q.data(), DType::Q6_K, y.data(), int64_t(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
        const auto& blk = q[i / 256];
        const float step = std::fabs(fp16_to_fp32(blk.d) * float(blk.scales[(i % 256) / 16]));
        ASSERT_LE(std::fabs(y[i] - x[i]), step) << i;
    }
}

TEST(Quant, ZeroRowsStayZero) {
    std::vector<float> x(256, 0.0f);
    for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q4_K, DType::Q6_K})
        for (float v : round_trip(x, t)) ASSERT_EQ(v, 0.0f) << dtype_name(t);
    BlockQ8_K b;
    quantize_row_q8_K(x.data(), &b, 256);
    EXPECT_EQ(b.d, 0.0f);
}

TEST(Quant, Q8_KMapsTheExtremeToMinus127AndSumsGroups) {
    auto x = gaussian(512, 5);
    x[7] = 10.0f;  // the extreme: iscale = -12.7
    std::vector<BlockQ8_K> b(2);
    quantize_row_q8_K(x.data(), b.data(), 512);
    EXPECT_EQ(b[0].qs[7], -127);
    EXPECT_FLOAT_EQ(b[0].d, -10.0f / 127.0f);
    for (int blk = 0; blk < 2; ++blk)
        for (int j = 0; j < 16; ++j) {
            int s = 0;
            for (int l = 0; l < 16; ++l) {
                const int i = blk * 256 + 16 * j + l;
                s += b[blk].qs[16 * j + l];
                ASSERT_LE(std::fabs(b[blk].d * float(b[blk].qs[16 * j + l]) - x[i]), std::fabs(b[blk].d) * 0.5001f);
            }
            EXPECT_EQ(b[blk].bsums[j], s);
        }
}

TEST(Quant, BadRowsAreErrorsNamingTypeAndSize) {
    std::vector<float> x(64);
    std::vector<uint8_t> q(1024);
    try {
        quantize_row(x.data(), DType::Q4_K, q.data(), 64);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "quantize_row: row of 64 elements is not a multiple of the q4_k block size 256");
    }
    try {
        dequantize_row(q.data(), DType::I32, x.data(), 4);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(
            e.what(),
            "dequantize_row: dtype 'i32' is not supported (allowed: f32, f16, bf16, q8_0, q4_0, q5_0, q4_k, q6_k)");
    }
    EXPECT_THROW(quantize_row_q8_K(x.data(), nullptr, 64), Error);
}

}  // namespace
}  // namespace duet::quant
