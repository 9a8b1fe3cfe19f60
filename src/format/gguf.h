#pragma once
// GGUF files (versions 2 and 3), read through a read-only memory map.
// Spec: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
//
// GgufFile::open validates the whole header before returning: magic, version, counts,
// every metadata value (including nested arrays), every tensor info (known type, shape
// a multiple of the block size, offset aligned to general.alignment, data inside the
// file, no duplicate keys or tensor names, no overlapping tensors). Any violation throws one
// duet::Error "<path>: <problem>"; a hostile header never causes a crash, and every count is
// bounded by the bytes that remain before anything is allocated, so memory use stays
// proportional to the file's size (metadata values cost ~50 bytes of memory per element).
// Nested arrays are accepted to a depth of kMaxArrayDepth.
//
// docs/gguf.md lists what the reader accepts and rejects.
//
// Thread safety: a GgufFile is immutable after open and may be read from any thread.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "format/mapped_file.h"

namespace duet::format {

enum class GgufType : uint32_t {
    UINT8 = 0,
    INT8 = 1,
    UINT16 = 2,
    INT16 = 3,
    UINT32 = 4,
    INT32 = 5,
    FLOAT32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    UINT64 = 10,
    INT64 = 11,
    FLOAT64 = 12,
};
const char* gguf_type_name(GgufType t);

struct GgufValue;
struct GgufArray {
    GgufType elem_type;
    std::vector<GgufValue> items;
};
// One metadata value. Integers of every width are held in int64_t/uint64_t, floats in double,
// with `type` telling what the file stored.
struct GgufValue {
    GgufType type = GgufType::UINT8;
    std::variant<int64_t, uint64_t, double, bool, std::string, std::shared_ptr<GgufArray>> v;
};

struct GgufTensorInfo {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;  // ggml order: shape[0] is the contiguous (row) dimension
    uint64_t offset = 0;         // from the start of the data section
    uint64_t n_bytes = 0;
    const uint8_t* data = nullptr;  // into the mapping
    int64_t n_elements() const;
};


class GgufFile {
  public:
    static constexpr int kMaxArrayDepth = 8;
    static constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS

    // throws duet::Error; mode and progress: MappedFile::open
    static GgufFile open(const std::string& path, LoadMode mode = LoadMode::MMAP,
                         const MappedFile::Progress& progress = nullptr);
    // Parses a copy of n_bytes at data; `name` stands for the path in error messages.
    static GgufFile open_memory(const void* data, size_t n_bytes, const std::string& name);
    GgufFile(GgufFile&&) noexcept;
    GgufFile& operator=(GgufFile&&) noexcept;
    ~GgufFile();

    const std::string& path() const { return path_; }
    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    uint64_t file_bytes() const;
    // The bytes behind the file (the read-only mapping, or the copy open_memory parsed).
    const MappedFile& mapping() const;
    uint64_t data_offset() const { return data_offset_; }  // start of the tensor data section

    const std::map<std::string, GgufValue>& metadata() const { return kv_; }
    const GgufValue* find(std::string_view key) const;
    bool has(std::string_view key) const { return find(key) != nullptr; }

    // Typed getters. The required forms throw duet::Error "<path>: metadata key '<key>' ..."
    // when the key is missing or holds another type; get_int accepts any integer type and
    // get_float any integer or float type.
    std::string get_string(std::string_view key) const;
    int64_t get_int(std::string_view key) const;
    double get_float(std::string_view key) const;
    bool get_bool(std::string_view key) const;
    std::vector<std::string> get_string_array(std::string_view key) const;
    std::vector<double> get_float_array(std::string_view key) const;
    std::vector<int64_t> get_int_array(std::string_view key) const;
    std::optional<std::string> find_string(std::string_view key) const;
    std::optional<int64_t> find_int(std::string_view key) const;
    std::optional<double> find_float(std::string_view key) const;
    std::optional<bool> find_bool(std::string_view key) const;

    const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
    const GgufTensorInfo* find_tensor(std::string_view name) const;
    const GgufTensorInfo& tensor(std::string_view name) const;  // throws naming file and tensor

  private:
    GgufFile() = default;
    std::string path_;
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    uint64_t data_offset_ = 0;
    friend class GgufParser;
    std::unique_ptr<MappedFile> map_;
    std::map<std::string, GgufValue> kv_;
    std::vector<GgufTensorInfo> tensors_;
    std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace duet::format
