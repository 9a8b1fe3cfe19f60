// GgufFile's typed metadata getters and tensor lookup.
#include "core/error.h"
#include "format/gguf.h"

namespace duet::format {

const char* gguf_type_name(GgufType t) {
    switch (t) {
        case GgufType::UINT8:
            return "uint8";
        case GgufType::INT8:
            return "int8";
        case GgufType::UINT16:
            return "uint16";
        case GgufType::INT16:
            return "int16";
        case GgufType::UINT32:
            return "uint32";
        case GgufType::INT32:
            return "int32";
        case GgufType::FLOAT32:
            return "float32";
        case GgufType::BOOL:
            return "bool";
        case GgufType::STRING:
            return "string";
        case GgufType::ARRAY:
            return "array";
        case GgufType::UINT64:
            return "uint64";
        case GgufType::INT64:
            return "int64";
        case GgufType::FLOAT64:
            return "float64";
    }
    return "unknown";
}

int64_t GgufTensorInfo::n_elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

namespace {

std::string describe(const GgufValue& v) {
    if (v.type == GgufType::ARRAY) {
        const auto& a = std::get<std::shared_ptr<GgufArray>>(v.v);
        return fmt::format("an array of {}", gguf_type_name(a->elem_type));
    }
    return gguf_type_name(v.type);
}

[[noreturn]] void wrong_type(const std::string& path, std::string_view key, const GgufValue& v, const char* expected) {
    fail("{}: metadata key '{}' holds {}, expected {}", path, key, describe(v), expected);
}

// Integer value of v, or nullopt when v is not an integer. Throws when a uint64 does not fit.
std::optional<int64_t> as_int(const std::string& path, std::string_view key, const GgufValue& v) {
    if (const int64_t* s = std::get_if<int64_t>(&v.v)) return *s;
    if (const uint64_t* u = std::get_if<uint64_t>(&v.v)) {
        if (*u > uint64_t(INT64_MAX)) fail("{}: metadata key '{}' = {} does not fit in int64", path, key, *u);
        return int64_t(*u);
    }
    return std::nullopt;
}

std::optional<double> as_float(const std::string& path, std::string_view key, const GgufValue& v) {
    if (const double* d = std::get_if<double>(&v.v)) return *d;
    if (auto i = as_int(path, key, v)) return double(*i);
    return std::nullopt;
}

const GgufArray& as_array(const std::string& path, std::string_view key, const GgufValue& v, const char* expected) {
    if (v.type != GgufType::ARRAY) wrong_type(path, key, v, expected);
    return *std::get<std::shared_ptr<GgufArray>>(v.v);
}

}  // namespace

const GgufValue* GgufFile::find(std::string_view key) const {
    auto it = kv_.find(std::string(key));
    return it == kv_.end() ? nullptr : &it->second;
}

namespace {
const GgufValue& require(const GgufFile& f, std::string_view key) {
    const GgufValue* v = f.find(key);
    if (!v) fail("{}: metadata key '{}' is missing", f.path(), key);
    return *v;
}
}  // namespace

std::string GgufFile::get_string(std::string_view key) const {
    const GgufValue& v = require(*this, key);
    if (v.type != GgufType::STRING) wrong_type(path_, key, v, "string");
    return std::get<std::string>(v.v);
}

int64_t GgufFile::get_int(std::string_view key) const {
    const GgufValue& v = require(*this, key);
    if (auto i = as_int(path_, key, v)) return *i;
    wrong_type(path_, key, v, "an integer");
}

double GgufFile::get_float(std::string_view key) const {
    const GgufValue& v = require(*this, key);
    if (auto d = as_float(path_, key, v)) return *d;
    wrong_type(path_, key, v, "a number");
}

bool GgufFile::get_bool(std::string_view key) const {
    const GgufValue& v = require(*this, key);
    if (v.type != GgufType::BOOL) wrong_type(path_, key, v, "bool");
    return std::get<bool>(v.v);
}

std::vector<std::string> GgufFile::get_string_array(std::string_view key) const {
    const GgufArray& a = as_array(path_, key, require(*this, key), "an array of string");
    if (a.elem_type != GgufType::STRING) wrong_type(path_, key, require(*this, key), "an array of string");
    std::vector<std::string> out;
    out.reserve(a.items.size());
    for (const auto& item : a.items) out.push_back(std::get<std::string>(item.v));
    return out;
}

std::vector<double> GgufFile::get_float_array(std::string_view key) const {
    const GgufValue& v = require(*this, key);
    const GgufArray& a = as_array(path_, key, v, "an array of numbers");
    std::vector<double> out;
    out.reserve(a.items.size());
    for (const auto& item : a.items) {
        auto d = as_float(path_, key, item);
        if (!d) wrong_type(path_, key, v, "an array of numbers");
        out.push_back(*d);
    }
    return out;
}

std::vector<int64_t> GgufFile::get_int_array(std::string_view key) const {
    const GgufValue& v = require(*this, key);
    const GgufArray& a = as_array(path_, key, v, "an array of integers");
    std::vector<int64_t> out;
    out.reserve(a.items.size());
    for (const auto& item : a.items) {
        auto i = as_int(path_, key, item);
        if (!i) wrong_type(path_, key, v, "an array of integers");
        out.push_back(*i);
    }
    return out;
}

std::optional<std::string> GgufFile::find_string(std::string_view key) const {
    if (!has(key)) return std::nullopt;
    return get_string(key);
}
std::optional<int64_t> GgufFile::find_int(std::string_view key) const {
    if (!has(key)) return std::nullopt;
    return get_int(key);
}
std::optional<double> GgufFile::find_float(std::string_view key) const {
    if (!has(key)) return std::nullopt;
    return get_float(key);
}
std::optional<bool> GgufFile::find_bool(std::string_view key) const {
    if (!has(key)) return std::nullopt;
    return get_bool(key);
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensorInfo& GgufFile::tensor(std::string_view name) const {
    if (const GgufTensorInfo* t = find_tensor(name)) return *t;
    fail("{}: tensor '{}' is missing", path_, name);
}

}  // namespace duet::format
