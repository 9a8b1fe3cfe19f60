#include "core/dtype.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace duet {
namespace {

constexpr DTypeInfo kInfos[] = {
    {DType::F32, "f32", 1, 4},
    {DType::F16, "f16", 1, 2},
    {DType::BF16, "bf16", 1, 2},
    {DType::Q8_0, "q8_0", kQK8_0, sizeof(BlockQ8_0)},
    {DType::Q4_0, "q4_0", kQK4_0, sizeof(BlockQ4_0)},
    {DType::Q5_0, "q5_0", kQK5_0, sizeof(BlockQ5_0)},
    {DType::Q4_K, "q4_k", kQK_K, sizeof(BlockQ4_K)},
    {DType::Q6_K, "q6_k", kQK_K, sizeof(BlockQ6_K)},
    {DType::I8, "i8", 1, 1},
    {DType::I32, "i32", 1, 4},
};

}  // namespace

const DTypeInfo& dtype_info(DType t) {
    for (const auto& i : kInfos)
        if (i.dtype == t) return i;
    DUET_CHECK(false, "unknown dtype {}", uint32_t(t));
}

std::optional<DType> dtype_from_ggml_id(uint32_t id) {
    for (const auto& i : kInfos)
        if (uint32_t(i.dtype) == id) return i.dtype;
    return std::nullopt;
}

std::optional<DType> dtype_from_name(std::string_view name) {
    for (const auto& i : kInfos)
        if (name == i.name) return i.dtype;
    return std::nullopt;
}

std::string dtype_names() {
    std::string s;
    for (const auto& i : kInfos) {
        if (!s.empty()) s += ", ";
        s += i.name;
    }
    return s;
}

const std::vector<DType>& matmul_weight_dtypes() {
    static const std::vector<DType> types = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0,
                                             DType::Q4_0, DType::Q5_0, DType::Q4_K, DType::Q6_K};
    return types;
}

bool is_matmul_weight_dtype(DType t) {
    const auto& m = matmul_weight_dtypes();
    return std::find(m.begin(), m.end(), t) != m.end();
}

std::string matmul_weight_dtype_names() {
    std::string s;
    for (DType t : matmul_weight_dtypes()) s += (s.empty() ? "" : ", ") + std::string(dtype_name(t));
    return s;
}

const std::vector<DTypeAlias>& dtype_aliases() {
    static const std::vector<DTypeAlias> aliases = {
        {"float32", "f32"}, {"fp32", "f32"}, {"float16", "f16"}, {"fp16", "f16"}, {"bfloat16", "bf16"}, {"int8", "i8"}};
    return aliases;
}

std::string canonical_dtype_name(std::string_view name) {
    for (const DTypeAlias& a : dtype_aliases())
        if (name == a.alias) return a.name;
    return std::string(name);
}

size_t row_bytes(DType t, int64_t n) {
    const auto& i = dtype_info(t);
    DUET_CHECK(n % i.block_elems == 0, "row of {} elements is not a multiple of {}'s block {}", n, i.name,
               i.block_elems);
    return size_t(n / i.block_elems) * size_t(i.block_bytes);
}

float fp16_to_fp32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    uint32_t u;
    if (exp == 0) {
        if (mant == 0) {
            u = sign;
        } else {  // subnormal: normalise
            int e = -1;
            do {
                mant <<= 1;
                ++e;
            } while (!(mant & 0x400));
            u = sign | uint32_t(127 - 15 - e) << 23 | (mant & 0x3ff) << 13;
        }
    } else if (exp == 31) {
        u = sign | 0x7f800000u | mant << 13;
    } else {
        u = sign | (exp + 127 - 15) << 23 | mant << 13;
    }
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

uint16_t fp32_to_fp16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    const uint16_t sign = uint16_t((u >> 16) & 0x8000);
    const uint32_t abs = u & 0x7fffffffu;
    if (abs >= 0x7f800000u) return uint16_t(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0));  // inf/nan
    if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // rounds to >= 65520: inf
    if (abs < 0x38800000u) {  // below the smallest normal half: subnormal or zero
        // value = abs_float; half subnormal unit is 2^-24
        float a;
        std::memcpy(&a, &abs, 4);
        float scaled = a * 16777216.0f;  // / 2^-24
        uint32_t m = uint32_t(std::nearbyint(scaled));  // round to nearest even (default mode)
        return uint16_t(sign | m);
    }
    uint32_t mant = abs & 0x7fffff;
    uint32_t exp = (abs >> 23) - 127 + 15;
    uint32_t h = exp << 10 | mant >> 13;
    uint32_t rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // may carry into exponent: correct
    return uint16_t(sign | h);
}

uint16_t fp32_to_bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
    u += 0x7fff + ((u >> 16) & 1);
    return uint16_t(u >> 16);
}

}  // namespace duet
