#pragma once
// Element types of tensors as stored in model files and in memory. Quantised types are
// stored in blocks (ggml's layout): a row of n elements is n / block_elems blocks of
// block_bytes each. The numeric ids are ggml's `ggml_type` values, which GGUF stores.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace duet {

enum class DType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q5_0 = 6,
    Q8_0 = 8,
    Q4_K = 12,
    Q6_K = 14,
    I8 = 24,
    I32 = 26,
    BF16 = 30,
};

struct DTypeInfo {
    DType dtype;
    const char* name;   // lower case, as on the command line: "f16", "q8_0"
    int block_elems;    // elements per block (1 for plain types)
    int block_bytes;    // bytes per block
};

const DTypeInfo& dtype_info(DType t);
std::optional<DType> dtype_from_ggml_id(uint32_t id);  // nullopt for types duet does not support
std::optional<DType> dtype_from_name(std::string_view name);
std::string dtype_names();  // "f32, f16, bf16, ..." for error messages
// The one spelling of each dtype is its name above ("f16"); where a user writes a dtype
// (settings.json runtime.dtype, config.toml pim.precision, --dtype/--kv-type) these other
// spellings are accepted and read as that name: float32, fp32 -> f32; float16, fp16 -> f16;
// bfloat16 -> bf16; int8 -> i8. Every output prints the one spelling.
// The dtypes a matmul weight may have: the one list the engine's kernels, quantisation, GGUF
// binding and gen-model take (f32, f16, bf16, q8_0, q4_0, q5_0, q4_k, q6_k).
const std::vector<DType>& matmul_weight_dtypes();
bool is_matmul_weight_dtype(DType t);
std::string matmul_weight_dtype_names();  // "f32, f16, bf16, q8_0, ..." for error messages
struct DTypeAlias {
    const char* alias;
    const char* name;
};
const std::vector<DTypeAlias>& dtype_aliases();
// `name` when it is no alias, else the name it stands for.
std::string canonical_dtype_name(std::string_view name);

inline const char* dtype_name(DType t) { return dtype_info(t).name; }
inline bool dtype_is_quantized(DType t) { return dtype_info(t).block_elems > 1; }
// Bytes of a row of n elements; n must be a multiple of the block size (checked by callers
// that read files, so this is a bug check here).
size_t row_bytes(DType t, int64_t n);

// Quantised block layouts (ggml-compatible). QK = elements per block.
constexpr int kQK4_0 = 32;
constexpr int kQK5_0 = 32;
constexpr int kQK8_0 = 32;
constexpr int kQK_K = 256;
struct BlockQ4_0 { uint16_t d; uint8_t qs[kQK4_0 / 2]; };            // d: f16 scale
// Q5_0: element j < 16 is the low nibble of qs[j], element j + 16 its high nibble; the fifth
// bit of element e (0..31) is bit e of qh (little-endian 32-bit); value = d * (q - 16).
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[kQK5_0 / 2]; };  // d: f16 scale
struct BlockQ8_0 { uint16_t d; int8_t qs[kQK8_0]; };                  // d: f16 scale
struct BlockQ4_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[kQK_K / 2]; };
struct BlockQ6_K { uint8_t ql[kQK_K / 2]; uint8_t qh[kQK_K / 4]; int8_t scales[kQK_K / 16]; uint16_t d; };
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ5_0) == 22 && sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ6_K) == 210);

// IEEE half and bfloat16 conversions (round to nearest even; NaN stays NaN).
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);
inline float bf16_to_fp32(uint16_t b) {
    uint32_t u = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
uint16_t fp32_to_bf16(float f);

}  // namespace duet
