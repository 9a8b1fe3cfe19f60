#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace duet {
namespace {

TEST(DType, GgmlIdsAndSizes) {
    EXPECT_EQ(dtype_from_ggml_id(8), DType::Q8_0);
    EXPECT_EQ(dtype_from_ggml_id(30), DType::BF16);
    EXPECT_FALSE(dtype_from_ggml_id(3).has_value());  // Q4_1: not supported
    EXPECT_EQ(row_bytes(DType::Q4_K, 512), 2u * 144u);
    EXPECT_EQ(row_bytes(DType::Q6_K, 256), 210u);
    EXPECT_EQ(row_bytes(DType::F16, 7), 14u);
    EXPECT_EQ(dtype_from_name("q4_0"), DType::Q4_0);
    EXPECT_EQ(dtype_from_ggml_id(6), DType::Q5_0);
    EXPECT_EQ(dtype_from_name("q5_0"), DType::Q5_0);
    EXPECT_EQ(row_bytes(DType::Q5_0, 896), 28u * 22u);  // Qwen2.5-0.5B's n_embd: 28 blocks
    EXPECT_FALSE(dtype_from_name("q5_1").has_value());
}

TEST(DType, Fp16RoundTripsEveryHalf) {
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const float f = fp16_to_fp32(uint16_t(h));
        if (std::isnan(f)) {
            EXPECT_TRUE(std::isnan(fp16_to_fp32(fp32_to_fp16(f))));
            continue;
        }
        ASSERT_EQ(fp32_to_fp16(f), uint16_t(h)) << "half 0x" << std::hex << h;
    }
}

TEST(DType, Fp16KnownValuesAndRounding) {
    EXPECT_EQ(fp32_to_fp16(1.0f), 0x3c00);
    EXPECT_EQ(fp32_to_fp16(-2.0f), 0xc000);
    EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7bff);
    EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);  // rounds up to infinity
    EXPECT_EQ(fp32_to_fp16(5.9604645e-8f), 0x0001);  // smallest subnormal
    // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties to even (1.0)
    EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
    EXPECT_EQ(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
    EXPECT_FLOAT_EQ(fp16_to_fp32(0x3555), 0.333251953125f);
}

TEST(DType, Bf16Rounding) {
    EXPECT_EQ(fp32_to_bf16(1.0f), 0x3f80);
    EXPECT_FLOAT_EQ(bf16_to_fp32(0x4049), 3.140625f);
    // 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: ties to even
    EXPECT_EQ(fp32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
    EXPECT_TRUE(std::isnan(bf16_to_fp32(fp32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

}  // namespace
}  // namespace duet
