#pragma once
// Writes GGUF files (version 3 by default, 2 on request) that any GGUF reader accepts.
//
// Use: set metadata, declare tensors (each with a producer that fills its bytes), then
// write(). Tensors are streamed: the writer asks each producer for chunks of whole rows
// (a row = shape[0] elements, row_bytes(dtype, shape[0]) bytes) into a buffer of at most
// ~kChunkBytes, so a 13 GB model never needs more than that in memory. Data is written to
// "<path>.tmp" and renamed to <path> only when complete; on error the .tmp is removed and
// duet::Error "<path>: ..." is thrown.
//
// Metadata keeps insertion order; setting a key again replaces its value in place. Tensor
// data is placed in declaration order at offsets aligned to the alignment (32 unless
// set_alignment, which also writes general.alignment).
//
// Thread safety: one writer per thread; producers are called on the calling thread.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "format/gguf.h"

namespace duet::format {

class GgufWriter {
  public:
    static constexpr size_t kChunkBytes = size_t(32) << 20;

    // Fills rows [row_begin, row_begin + n_rows) of the tensor into dst (n_rows * row bytes).
    using Producer = std::function<void(int64_t row_begin, int64_t n_rows, uint8_t* dst)>;
    // Called with (0, total) before the file is created (a throw there writes nothing), then after
    // every chunk with the tensor-data bytes written so far and the total.
    using Progress = std::function<void(uint64_t done_bytes, uint64_t total_bytes)>;

    explicit GgufWriter(std::string path, uint32_t version = 3);

    void set_value(std::string_view key, GgufValue v);
    void set_u8(std::string_view key, uint8_t v);
    void set_i8(std::string_view key, int8_t v);
    void set_u16(std::string_view key, uint16_t v);
    void set_i16(std::string_view key, int16_t v);
    void set_u32(std::string_view key, uint32_t v);
    void set_i32(std::string_view key, int32_t v);
    void set_u64(std::string_view key, uint64_t v);
    void set_i64(std::string_view key, int64_t v);
    void set_f32(std::string_view key, float v);
    void set_f64(std::string_view key, double v);
    void set_bool(std::string_view key, bool v);
    void set_string(std::string_view key, std::string v);
    void set_array(std::string_view key, GgufType elem_type, std::vector<GgufValue> items);
    void set_string_array(std::string_view key, const std::vector<std::string>& v);
    void set_f32_array(std::string_view key, const std::vector<float>& v);
    void set_i32_array(std::string_view key, const std::vector<int32_t>& v);
    void set_alignment(uint32_t alignment);  // power of two; writes general.alignment
    bool remove(std::string_view key);       // false when the key was not set

    // Declares a tensor. shape in ggml order (shape[0] = row length, a multiple of the
    // dtype's block size). Throws duet::Error on a duplicate name or a bad shape.
    void add_tensor(std::string name, DType dtype, std::vector<int64_t> shape, Producer fill);
    // Convenience: the tensor's bytes given whole (size must equal the tensor's bytes).
    void add_tensor_bytes(std::string name, DType dtype, std::vector<int64_t> shape, std::vector<uint8_t> bytes);
    // Convenience: F32 data converted to dtype with the row converters of core (f32/f16/bf16 only).
    void add_tensor_f32(std::string name, DType dtype, std::vector<int64_t> shape, std::vector<float> values);

    uint64_t tensor_data_bytes() const;  // sum of the tensors' bytes (without padding)
    void write(const Progress& progress = nullptr);

    // Helpers to build values for set_value / set_array.
    static GgufValue u32(uint32_t v);
    static GgufValue i32(int32_t v);
    static GgufValue f32(float v);
    static GgufValue str(std::string v);
    static GgufValue array(GgufType elem_type, std::vector<GgufValue> items);

  private:
    struct Tensor {
        std::string name;
        DType dtype;
        std::vector<int64_t> shape;
        uint64_t n_bytes;
        uint64_t offset;
        Producer fill;
    };
    std::string path_;
    uint32_t version_;
    uint64_t alignment_ = 32;
    std::vector<std::pair<std::string, GgufValue>> kv_;
    std::vector<Tensor> tensors_;
};

}  // namespace duet::format
