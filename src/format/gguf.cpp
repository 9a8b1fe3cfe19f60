// GGUF parsing: every read is bounds-checked against the mapping, every count is checked
// against the bytes that remain before anything is allocated.
#include "format/gguf.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <set>

#include "core/error.h"
#include "format/ggml_types.h"
#include "format/mapped_file.h"

namespace duet::format {

class GgufParser {
  public:
    GgufParser(GgufFile& f) : f_(f), p_(f.map_->data()), n_(f.map_->size_bytes()), path_(f.path_) {}

    void parse() {
        read_header();
        for (uint64_t i = 0; i < n_kv_; ++i) read_kv(i);
        read_alignment();
        f_.tensors_.reserve(size_t(n_tensors_));
        for (uint64_t i = 0; i < n_tensors_; ++i) read_tensor_info(i);
        place_tensors();
    }

  private:
    // Minimal encoded sizes, used to bound counts by the bytes that remain.
    static constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;                  // key len, 1-char key, type, u8
    static constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;  // name, n_dims, 1 dim, type, offset

    uint64_t remaining() const { return n_ - pos_; }

    void need(uint64_t n_bytes, std::string_view what) const {
        if (n_bytes > remaining())
            fail("{}: truncated file: {} at byte offset {} needs {} bytes but only {} remain", path_, what, pos_,
                 n_bytes, remaining());
    }

    template <typename T>
    T read(std::string_view what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, p_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    std::string read_string(std::string_view what) {
        const uint64_t len = read<uint64_t>(what);
        need(len, what);
        std::string s(reinterpret_cast<const char*>(p_ + pos_), size_t(len));
        pos_ += len;
        return s;
    }

    void read_header() {
        if (n_ < 4) need(4, "the magic");
        if (std::memcmp(p_, "GGUF", 4) != 0)
            fail("{}: not a GGUF file: magic bytes are {:02x} {:02x} {:02x} {:02x}, expected 47 47 55 46 ('GGUF')",
                 path_, p_[0], p_[1], p_[2], p_[3]);
        pos_ = 4;
        const uint32_t version = read<uint32_t>("the version");
        if (version != 2 && version != 3) {
            const uint32_t swapped = __builtin_bswap32(version);
            if (swapped == 2 || swapped == 3)
                fail("{}: big-endian GGUF files are not supported (version field reads {} byte-swapped)", path_,
                     swapped);
            fail("{}: unsupported GGUF version {} (supported: 2, 3)", path_, version);
        }
        f_.version_ = version;
        n_tensors_ = read<uint64_t>("the tensor count");
        n_kv_ = read<uint64_t>("the metadata key count");
        if (n_kv_ > remaining() / kMinKvBytes)
            fail("{}: header claims {} metadata keys but the {} bytes after the header can hold at most {}", path_,
                 n_kv_, remaining(), remaining() / kMinKvBytes);
        if (n_tensors_ > remaining() / kMinTensorInfoBytes)
            fail("{}: header claims {} tensors but the {} bytes after the header can hold at most {}", path_,
                 n_tensors_, remaining(), remaining() / kMinTensorInfoBytes);
        if (n_kv_ * kMinKvBytes + n_tensors_ * kMinTensorInfoBytes > remaining())
            fail("{}: header claims {} metadata keys and {} tensors, more than the {} bytes after the header can hold",
                 path_, n_kv_, n_tensors_, remaining());
    }

    static uint64_t min_value_bytes(GgufType t) {
        switch (t) {
            case GgufType::UINT8:
            case GgufType::INT8:
            case GgufType::BOOL:
                return 1;
            case GgufType::UINT16:
            case GgufType::INT16:
                return 2;
            case GgufType::UINT32:
            case GgufType::INT32:
            case GgufType::FLOAT32:
                return 4;
            case GgufType::UINT64:
            case GgufType::INT64:
            case GgufType::FLOAT64:
                return 8;
            case GgufType::STRING:
                return 8;
            case GgufType::ARRAY:
                return 12;
        }
        return 1;
    }

    GgufType read_type(const std::string& ctx) {
        const uint32_t t = read<uint32_t>(ctx);
        if (t > uint32_t(GgufType::FLOAT64))
            fail("{}: {} has unknown value type {} at byte offset {} (allowed: 0..12)", path_, ctx, t, pos_ - 4);
        return GgufType(t);
    }

    GgufValue read_value(GgufType type, const std::string& ctx, int depth) {
        GgufValue v;
        v.type = type;
        switch (type) {
            case GgufType::UINT8:
                v.v = uint64_t(read<uint8_t>(ctx));
                break;
            case GgufType::INT8:
                v.v = int64_t(read<int8_t>(ctx));
                break;
            case GgufType::UINT16:
                v.v = uint64_t(read<uint16_t>(ctx));
                break;
            case GgufType::INT16:
                v.v = int64_t(read<int16_t>(ctx));
                break;
            case GgufType::UINT32:
                v.v = uint64_t(read<uint32_t>(ctx));
                break;
            case GgufType::INT32:
                v.v = int64_t(read<int32_t>(ctx));
                break;
            case GgufType::UINT64:
                v.v = read<uint64_t>(ctx);
                break;
            case GgufType::INT64:
                v.v = read<int64_t>(ctx);
                break;
            case GgufType::FLOAT32:
                v.v = double(read<float>(ctx));
                break;
            case GgufType::FLOAT64:
                v.v = read<double>(ctx);
                break;
            case GgufType::BOOL: {
                const uint8_t b = read<uint8_t>(ctx);
                if (b > 1) fail("{}: {} is a bool with value {} (allowed: 0, 1)", path_, ctx, b);
                v.v = b == 1;
                break;
            }
            case GgufType::STRING:
                v.v = read_string(ctx);
                break;
            case GgufType::ARRAY:
                v.v = read_array(ctx, depth + 1);
                break;
        }
        return v;
    }

    std::shared_ptr<GgufArray> read_array(const std::string& ctx, int depth) {
        if (depth > GgufFile::kMaxArrayDepth)
            fail("{}: {} nests arrays deeper than {} levels", path_, ctx, GgufFile::kMaxArrayDepth);
        auto arr = std::make_shared<GgufArray>();
        arr->elem_type = read_type(ctx);
        const uint64_t count = read<uint64_t>(ctx);
        const uint64_t min_bytes = min_value_bytes(arr->elem_type);
        if (count > remaining() / min_bytes)
            fail("{}: {} claims an array of {} {} values at byte offset {}, more than the {} remaining bytes can hold",
                 path_, ctx, count, gguf_type_name(arr->elem_type), pos_ - 12, remaining());
        arr->items.reserve(size_t(count));
        for (uint64_t i = 0; i < count; ++i) arr->items.push_back(read_value(arr->elem_type, ctx, depth));
        return arr;
    }

    void read_kv(uint64_t i) {
        const size_t key_pos = pos_;
        std::string key = read_string(fmt::format("the name of metadata key #{}", i));
        if (key.empty()) fail("{}: metadata key #{} at byte offset {} has an empty name", path_, i, key_pos);
        const std::string ctx = fmt::format("metadata key '{}'", key);
        const GgufType type = read_type(ctx);
        GgufValue v = read_value(type, ctx, 0);
        if (!f_.kv_.emplace(std::move(key), std::move(v)).second)
            fail("{}: duplicate {} (second copy at byte offset {})", path_, ctx, key_pos);
    }

    void read_alignment() {
        const GgufValue* v = f_.find("general.alignment");
        if (!v) return;
        uint64_t a = 0;
        if (const uint64_t* u = std::get_if<uint64_t>(&v->v)) {
            a = *u;
        } else if (const int64_t* s = std::get_if<int64_t>(&v->v)) {
            if (*s <= 0)
                fail("{}: metadata key 'general.alignment' = {} is not allowed (allowed: a power of two up to 2^30)",
                     path_, *s);
            a = uint64_t(*s);
        } else {
            fail("{}: metadata key 'general.alignment' holds {}, expected uint32", path_, gguf_type_name(v->type));
        }
        if (a == 0 || (a & (a - 1)) != 0 || a > (uint64_t(1) << 30))
            fail("{}: metadata key 'general.alignment' = {} is not allowed (allowed: a power of two up to 2^30)", path_,
                 a);
        f_.alignment_ = a;
    }

    void read_tensor_info(uint64_t i) {
        const size_t info_pos = pos_;
        GgufTensorInfo t;
        t.name = read_string(fmt::format("the name of tensor #{}", i));
        if (t.name.empty()) fail("{}: tensor #{} at byte offset {} has an empty name", path_, i, info_pos);
        const std::string ctx = fmt::format("tensor '{}'", t.name);
        const uint32_t n_dims = read<uint32_t>(ctx);
        if (n_dims == 0 || n_dims > GgufFile::kMaxDims)
            fail("{}: {} has {} dimensions (allowed: 1..{})", path_, ctx, n_dims, GgufFile::kMaxDims);
        uint64_t n_elements = 1;
        for (uint32_t d = 0; d < n_dims; ++d) {
            const uint64_t dim = read<uint64_t>(ctx);
            if (dim == 0 || dim > uint64_t(INT64_MAX) / n_elements)
                fail("{}: {} has dimension {} = {} (allowed: 1.. with at most 2^63-1 elements in all)", path_, ctx, d,
                     dim);
            n_elements *= dim;
            t.shape.push_back(int64_t(dim));
        }
        const uint32_t type_id = read<uint32_t>(ctx);
        auto dtype = dtype_from_ggml_id(type_id);
        if (!dtype)
            fail("{}: {} has type {} (ggml type {}), which duet does not support (supported: {})", path_, ctx,
                 ggml_type_name(type_id), type_id, dtype_names());
        t.dtype = *dtype;
        t.offset = read<uint64_t>(ctx);
        const auto& info = dtype_info(t.dtype);
        if (t.shape[0] % info.block_elems != 0)
            fail("{}: {} of type {} has shape[0] = {}, which is not a multiple of its block size {}", path_, ctx,
                 info.name, t.shape[0], info.block_elems);
        const unsigned __int128 bytes =
            (unsigned __int128)(n_elements / uint64_t(info.block_elems)) * uint64_t(info.block_bytes);
        if (bytes > n_)
            fail("{}: {} needs {} bytes of data, more than the whole file ({} bytes)", path_, ctx, uint64_t(bytes), n_);
        t.n_bytes = uint64_t(bytes);
        if (t.offset % f_.alignment_ != 0)
            fail("{}: {} has offset {}, which is not a multiple of general.alignment = {}", path_, ctx, t.offset,
                 f_.alignment_);
        if (!f_.tensor_index_.emplace(t.name, f_.tensors_.size()).second)
            fail("{}: duplicate tensor name '{}' (tensor #{})", path_, t.name, i);
        f_.tensors_.push_back(std::move(t));
    }

    void place_tensors() {
        const uint64_t a = f_.alignment_;
        const uint64_t data_offset = (uint64_t(pos_) + a - 1) / a * a;
        f_.data_offset_ = data_offset;
        if (f_.tensors_.empty()) return;
        if (data_offset > n_)
            fail("{}: truncated file: the tensor data section starts at byte offset {} but the file has {} bytes",
                 path_, data_offset, n_);
        const uint64_t data_bytes = n_ - data_offset;
        for (auto& t : f_.tensors_) {
            if (t.offset > data_bytes || t.n_bytes > data_bytes - t.offset)
                fail(
                    "{}: tensor '{}' (data bytes {}..{}) extends past the end of the file (the data section holds "
                    "{} bytes)",
                    path_, t.name, t.offset, uint64_t((unsigned __int128)t.offset + t.n_bytes), data_bytes);
            t.data = p_ + data_offset + t.offset;
        }
        std::vector<size_t> order(f_.tensors_.size());
        std::iota(order.begin(), order.end(), size_t(0));
        std::sort(order.begin(), order.end(),
                  [&](size_t x, size_t y) { return f_.tensors_[x].offset < f_.tensors_[y].offset; });
        for (size_t k = 1; k < order.size(); ++k) {
            const auto& prev = f_.tensors_[order[k - 1]];
            const auto& cur = f_.tensors_[order[k]];
            if (prev.offset + prev.n_bytes > cur.offset)
                fail("{}: tensors '{}' (data bytes {}..{}) and '{}' (from {}) overlap", path_, prev.name, prev.offset,
                     prev.offset + prev.n_bytes, cur.name, cur.offset);
        }
    }

    GgufFile& f_;
    const uint8_t* p_;
    const uint64_t n_;
    const std::string& path_;
    uint64_t pos_ = 0;
    uint64_t n_tensors_ = 0, n_kv_ = 0;
};

GgufFile GgufFile::open(const std::string& path, LoadMode mode, const MappedFile::Progress& progress) {
    GgufFile f;
    f.path_ = path;
    f.map_ = MappedFile::open(path, mode, progress);
    GgufParser(f).parse();
    return f;
}

GgufFile GgufFile::open_memory(const void* data, size_t n_bytes, const std::string& name) {
    GgufFile f;
    f.path_ = name;
    f.map_ = MappedFile::from_bytes(data, n_bytes);
    GgufParser(f).parse();
    return f;
}

GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

uint64_t GgufFile::file_bytes() const { return map_ ? map_->size_bytes() : 0; }
const MappedFile& GgufFile::mapping() const { return *map_; }

}  // namespace duet::format
