#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "layout/nz_format.h"

using namespace duet;
using namespace duet::layout;

TEST(NzFormat, FractalShapesPerDtype) {
    EXPECT_EQ(nz_shape(16, 16, DType::F16).nz_bytes(), 512u);  // one 16x16 f16 fractal
    EXPECT_EQ(nz_shape(16, 32, DType::I8).n0, 32);
    EXPECT_EQ(nz_shape(16, 32, DType::I8).nz_bytes(), 512u);
    EXPECT_EQ(nz_shape(16, 8, DType::F32).n0, 8);
    EXPECT_EQ(nz_shape(16, 16, DType::BF16).n0, 16);
    const NzShape s = nz_shape(17, 18, DType::F16);
    EXPECT_EQ(s.m1, 2);
    EXPECT_EQ(s.n1, 2);
    EXPECT_EQ(s.nz_bytes(), 2u * 32 * 16 * 2);
    EXPECT_EQ(s.padding_bytes(), 2u * 32 * 16 * 2 - 17 * 18 * 2);
    // NZ [n1][m1*16][n0]: element (16, 17) is in fractal column 1, row 16, lane 1.
    EXPECT_EQ(nz_index(s, 16, 17), (1u * 32 + 16) * 16 + 1);
    EXPECT_EQ(nz_index(s, 0, 15), 15u);
    EXPECT_EQ(nz_index(s, 1, 0), 16u);
}

TEST(NzFormat, RoundTripOnRandomShapes) {
    std::mt19937 rng(42);
    const DType dtypes[] = {DType::F16, DType::BF16, DType::I8, DType::F32};
    for (int iter = 0; iter < 300; ++iter) {
        const int64_t m = 1 + rng() % 70, n = 1 + rng() % 90;
        const DType dt = dtypes[rng() % 4];
        const NzShape s = nz_shape(m, n, dt);
        std::vector<uint8_t> nd(s.nd_bytes());
        for (auto& b : nd) b = uint8_t(1 + rng() % 255);
        const auto nz = nd_to_nz(nd.data(), s);
        ASSERT_EQ(nz.size(), s.nz_bytes());
        uint64_t zeros = 0;
        for (uint8_t b : nz) zeros += b == 0;
        EXPECT_EQ(zeros, s.padding_bytes());
        // Spot-check the mapping against the formula with element-sized compares.
        const int64_t i = rng() % m, j = rng() % n;
        EXPECT_EQ(0, std::memcmp(nz.data() + nz_index(s, i, j) * s.elem_bytes, nd.data() + (i * n + j) * s.elem_bytes,
                                 size_t(s.elem_bytes)));
        EXPECT_EQ(nz_to_nd(nz.data(), nz.size(), s), nd);
    }
}

TEST(NzFormat, Errors) {
    try {
        nz_shape(4, 4, DType::Q8_0);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "FRACTAL_NZ: dtype q8_0 has no fractal (allowed: f16, bf16, i8, f32)");
    }
    const NzShape s = nz_shape(3, 3, DType::F16);
    std::vector<uint8_t> nz(s.nz_bytes() + 2);
    try {
        nz_to_nd(nz.data(), nz.size(), s);
        FAIL();
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "nz_to_nd: buffer of 514 bytes does not match NZ [1][16][16] of 512 bytes");
    }
}
