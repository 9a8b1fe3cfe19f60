#include "format/gguf_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>

#include "core/error.h"

namespace duet::format {
namespace {

class Bytes {
  public:
    template <typename T>
    void put(T v) {
        const size_t at = s_.size();
        s_.resize(at + sizeof(T));
        std::memcpy(s_.data() + at, &v, sizeof(T));
    }
    void put_string(std::string_view s) {
        put<uint64_t>(s.size());
        s_.append(s);
    }
    void put_value(const GgufValue& v) {
        switch (v.type) {
            case GgufType::UINT8:
                put<uint8_t>(uint8_t(std::get<uint64_t>(v.v)));
                break;
            case GgufType::INT8:
                put<int8_t>(int8_t(std::get<int64_t>(v.v)));
                break;
            case GgufType::UINT16:
                put<uint16_t>(uint16_t(std::get<uint64_t>(v.v)));
                break;
            case GgufType::INT16:
                put<int16_t>(int16_t(std::get<int64_t>(v.v)));
                break;
            case GgufType::UINT32:
                put<uint32_t>(uint32_t(std::get<uint64_t>(v.v)));
                break;
            case GgufType::INT32:
                put<int32_t>(int32_t(std::get<int64_t>(v.v)));
                break;
            case GgufType::UINT64:
                put<uint64_t>(std::get<uint64_t>(v.v));
                break;
            case GgufType::INT64:
                put<int64_t>(std::get<int64_t>(v.v));
                break;
            case GgufType::FLOAT32:
                put<float>(float(std::get<double>(v.v)));
                break;
            case GgufType::FLOAT64:
                put<double>(std::get<double>(v.v));
                break;
            case GgufType::BOOL:
                put<uint8_t>(std::get<bool>(v.v) ? 1 : 0);
                break;
            case GgufType::STRING:
                put_string(std::get<std::string>(v.v));
                break;
            case GgufType::ARRAY: {
                const auto& a = *std::get<std::shared_ptr<GgufArray>>(v.v);
                put<uint32_t>(uint32_t(a.elem_type));
                put<uint64_t>(a.items.size());
                for (const auto& item : a.items) {
                    DUET_CHECK(item.type == a.elem_type, "array item of type {} in an array of {}",
                               gguf_type_name(item.type), gguf_type_name(a.elem_type));
                    put_value(item);
                }
                break;
            }
        }
    }
    void pad_to(uint64_t alignment) {
        while (s_.size() % alignment) s_.push_back('\0');
    }
    const std::string& str() const { return s_; }

  private:
    std::string s_;
};

GgufValue make(GgufType t, decltype(GgufValue::v) v) {
    GgufValue g;
    g.type = t;
    g.v = std::move(v);
    return g;
}

struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

GgufValue GgufWriter::u32(uint32_t v) { return make(GgufType::UINT32, uint64_t(v)); }
GgufValue GgufWriter::i32(int32_t v) { return make(GgufType::INT32, int64_t(v)); }
GgufValue GgufWriter::f32(float v) { return make(GgufType::FLOAT32, double(v)); }
GgufValue GgufWriter::str(std::string v) { return make(GgufType::STRING, std::move(v)); }
GgufValue GgufWriter::array(GgufType elem_type, std::vector<GgufValue> items) {
    auto a = std::make_shared<GgufArray>();
    a->elem_type = elem_type;
    a->items = std::move(items);
    return make(GgufType::ARRAY, std::move(a));
}

GgufWriter::GgufWriter(std::string path, uint32_t version) : path_(std::move(path)), version_(version) {
    DUET_CHECK(version == 2 || version == 3, "GGUF version {}", version);
}

void GgufWriter::set_value(std::string_view key, GgufValue v) {
    for (auto& [k, old] : kv_)
        if (k == key) {
            old = std::move(v);
            return;
        }
    kv_.emplace_back(std::string(key), std::move(v));
}

void GgufWriter::set_u8(std::string_view k, uint8_t v) { set_value(k, make(GgufType::UINT8, uint64_t(v))); }
void GgufWriter::set_i8(std::string_view k, int8_t v) { set_value(k, make(GgufType::INT8, int64_t(v))); }
void GgufWriter::set_u16(std::string_view k, uint16_t v) { set_value(k, make(GgufType::UINT16, uint64_t(v))); }
void GgufWriter::set_i16(std::string_view k, int16_t v) { set_value(k, make(GgufType::INT16, int64_t(v))); }
void GgufWriter::set_u32(std::string_view k, uint32_t v) { set_value(k, u32(v)); }
void GgufWriter::set_i32(std::string_view k, int32_t v) { set_value(k, i32(v)); }
void GgufWriter::set_u64(std::string_view k, uint64_t v) { set_value(k, make(GgufType::UINT64, v)); }
void GgufWriter::set_i64(std::string_view k, int64_t v) { set_value(k, make(GgufType::INT64, v)); }
void GgufWriter::set_f32(std::string_view k, float v) { set_value(k, f32(v)); }
void GgufWriter::set_f64(std::string_view k, double v) { set_value(k, make(GgufType::FLOAT64, v)); }
void GgufWriter::set_bool(std::string_view k, bool v) { set_value(k, make(GgufType::BOOL, v)); }
void GgufWriter::set_string(std::string_view k, std::string v) { set_value(k, str(std::move(v))); }

void GgufWriter::set_array(std::string_view key, GgufType elem_type, std::vector<GgufValue> items) {
    set_value(key, array(elem_type, std::move(items)));
}

void GgufWriter::set_string_array(std::string_view key, const std::vector<std::string>& v) {
    std::vector<GgufValue> items;
    items.reserve(v.size());
    for (const auto& s : v) items.push_back(str(s));
    set_array(key, GgufType::STRING, std::move(items));
}

void GgufWriter::set_f32_array(std::string_view key, const std::vector<float>& v) {
    std::vector<GgufValue> items;
    items.reserve(v.size());
    for (float x : v) items.push_back(f32(x));
    set_array(key, GgufType::FLOAT32, std::move(items));
}

void GgufWriter::set_i32_array(std::string_view key, const std::vector<int32_t>& v) {
    std::vector<GgufValue> items;
    items.reserve(v.size());
    for (int32_t x : v) items.push_back(i32(x));
    set_array(key, GgufType::INT32, std::move(items));
}

void GgufWriter::set_alignment(uint32_t alignment) {
    DUET_CHECK(alignment > 0 && (alignment & (alignment - 1)) == 0, "alignment {}", alignment);
    alignment_ = alignment;
    set_u32("general.alignment", alignment);
}

bool GgufWriter::remove(std::string_view key) {
    for (auto it = kv_.begin(); it != kv_.end(); ++it)
        if (it->first == key) {
            kv_.erase(it);
            return true;
        }
    return false;
}

void GgufWriter::add_tensor(std::string name, DType dtype, std::vector<int64_t> shape, Producer fill) {
    for (const auto& t : tensors_)
        if (t.name == name) fail("{}: duplicate tensor name '{}'", path_, name);
    const auto& info = dtype_info(dtype);
    if (shape.empty() || shape.size() > GgufFile::kMaxDims)
        fail("{}: tensor '{}' has {} dimensions (allowed: 1..{})", path_, name, shape.size(), GgufFile::kMaxDims);
    int64_t n = 1;
    for (int64_t d : shape) {
        if (d <= 0) fail("{}: tensor '{}' has a dimension of {} (allowed: >= 1)", path_, name, d);
        n *= d;
    }
    if (shape[0] % info.block_elems != 0)
        fail("{}: tensor '{}' of type {} has shape[0] = {}, which is not a multiple of its block size {}", path_, name,
             info.name, shape[0], info.block_elems);
    const uint64_t n_bytes = uint64_t(n / info.block_elems) * uint64_t(info.block_bytes);
    tensors_.push_back({std::move(name), dtype, std::move(shape), n_bytes, 0, std::move(fill)});
}

void GgufWriter::add_tensor_bytes(std::string name, DType dtype, std::vector<int64_t> shape,
                                  std::vector<uint8_t> bytes) {
    auto data = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
    add_tensor(std::move(name), dtype, std::move(shape), nullptr);  // validates name and shape
    Tensor& t = tensors_.back();
    if (t.n_bytes != data->size()) {
        const std::string msg = fmt::format("{}: tensor '{}' is given {} bytes but its shape and type need {}", path_,
                                            t.name, data->size(), t.n_bytes);
        tensors_.pop_back();
        throw Error(msg);
    }
    const size_t row = row_bytes(dtype, t.shape[0]);
    t.fill = [data, row](int64_t r0, int64_t nr, uint8_t* dst) {
        std::memcpy(dst, data->data() + size_t(r0) * row, size_t(nr) * row);
    };
}

void GgufWriter::add_tensor_f32(std::string name, DType dtype, std::vector<int64_t> shape, std::vector<float> values) {
    DUET_CHECK(dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16, "add_tensor_f32 to {}",
               dtype_name(dtype));
    std::vector<uint8_t> bytes(values.size() * dtype_info(dtype).block_bytes);
    for (size_t i = 0; i < values.size(); ++i) {
        if (dtype == DType::F32) {
            std::memcpy(&bytes[4 * i], &values[i], 4);
        } else {
            const uint16_t h = dtype == DType::F16 ? fp32_to_fp16(values[i]) : fp32_to_bf16(values[i]);
            std::memcpy(&bytes[2 * i], &h, 2);
        }
    }
    add_tensor_bytes(std::move(name), dtype, std::move(shape), std::move(bytes));
}

uint64_t GgufWriter::tensor_data_bytes() const {
    uint64_t n = 0;
    for (const auto& t : tensors_) n += t.n_bytes;
    return n;
}

void GgufWriter::write(const Progress& progress) {
    Bytes h;
    h.put<uint32_t>(0x46554747u);  // "GGUF" little-endian
    h.put<uint32_t>(version_);
    h.put<uint64_t>(tensors_.size());
    h.put<uint64_t>(kv_.size());
    for (const auto& [key, value] : kv_) {
        h.put_string(key);
        h.put<uint32_t>(uint32_t(value.type));
        h.put_value(value);
    }
    uint64_t offset = 0;
    for (auto& t : tensors_) {
        t.offset = offset;
        offset += (t.n_bytes + alignment_ - 1) / alignment_ * alignment_;
        h.put_string(t.name);
        h.put<uint32_t>(uint32_t(t.shape.size()));
        for (int64_t d : t.shape) h.put<uint64_t>(uint64_t(d));
        h.put<uint32_t>(uint32_t(t.dtype));
        h.put<uint64_t>(t.offset);
    }
    h.pad_to(alignment_);

    // Once before the file is created, so a caller can refuse (throw) before any byte is written.
    if (progress) progress(0, tensor_data_bytes());
    const std::string tmp = path_ + ".tmp";
    std::unique_ptr<std::FILE, FileCloser> out(std::fopen(tmp.c_str(), "wb"));
    if (!out) fail("{}: cannot write: {}", tmp, std::strerror(errno));
    auto check = [&](bool ok) {
        if (!ok) {
            const int e = errno;
            out.reset();
            std::remove(tmp.c_str());
            fail("{}: cannot write: {}", tmp, std::strerror(e));
        }
    };
    check(std::fwrite(h.str().data(), 1, h.str().size(), out.get()) == h.str().size());

    const uint64_t total = tensor_data_bytes();
    uint64_t done = 0;
    std::vector<uint8_t> buf;
    static const uint8_t kZeros[4096] = {};
    try {
        for (const auto& t : tensors_) {
            const int64_t n_rows = t.shape[0] > 0 ? int64_t(t.n_bytes / row_bytes(t.dtype, t.shape[0])) : 0;
            const size_t rb = row_bytes(t.dtype, t.shape[0]);
            const int64_t rows_per_chunk = std::max<int64_t>(1, int64_t(kChunkBytes / rb));
            for (int64_t r = 0; r < n_rows; r += rows_per_chunk) {
                const int64_t nr = std::min(rows_per_chunk, n_rows - r);
                buf.resize(size_t(nr) * rb);
                t.fill(r, nr, buf.data());
                check(std::fwrite(buf.data(), 1, buf.size(), out.get()) == buf.size());
                done += buf.size();
                if (progress) progress(done, total);
            }
            const uint64_t pad = (alignment_ - t.n_bytes % alignment_) % alignment_;
            for (uint64_t p = pad; p > 0;) {
                const size_t k = size_t(std::min<uint64_t>(p, sizeof(kZeros)));
                check(std::fwrite(kZeros, 1, k, out.get()) == k);
                p -= k;
            }
        }
    } catch (...) {
        out.reset();
        std::remove(tmp.c_str());
        throw;
    }
    check(std::fflush(out.get()) == 0);
    out.reset();
    if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
        const int e = errno;
        std::remove(tmp.c_str());
        fail("{}: cannot rename {} to it: {}", path_, tmp, std::strerror(e));
    }
}

}  // namespace duet::format
