#pragma once
// Hand-built GGUF byte buffers for reader tests: every field written explicitly, so a test can
// put any hostile value anywhere.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace duet::format::test {

class GgufBytes {
  public:
    std::vector<uint8_t> b;

    template <typename T>
    GgufBytes& put(T v) {
        const size_t at = b.size();
        b.resize(at + sizeof(T));
        std::memcpy(b.data() + at, &v, sizeof(T));
        return *this;
    }
    GgufBytes& str(std::string_view s) {
        put<uint64_t>(s.size());
        b.insert(b.end(), s.begin(), s.end());
        return *this;
    }
    GgufBytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
        b.insert(b.end(), {'G', 'G', 'U', 'F'});
        return put<uint32_t>(version).put<uint64_t>(n_tensors).put<uint64_t>(n_kv);
    }
    // key + type id; the caller appends the value.
    GgufBytes& key(std::string_view k, uint32_t type) { return str(k).put<uint32_t>(type); }
    GgufBytes& kv_u32(std::string_view k, uint32_t v) { return key(k, 4).put<uint32_t>(v); }
    GgufBytes& kv_str(std::string_view k, std::string_view v) { return key(k, 8).str(v); }
    GgufBytes& tensor(std::string_view name, std::vector<uint64_t> shape, uint32_t type, uint64_t offset) {
        str(name).put<uint32_t>(uint32_t(shape.size()));
        for (uint64_t d : shape) put<uint64_t>(d);
        return put<uint32_t>(type).put<uint64_t>(offset);
    }
    GgufBytes& pad(size_t alignment) {
        while (b.size() % alignment) b.push_back(0);
        return *this;
    }
    GgufBytes& zeros(size_t n) {
        b.insert(b.end(), n, 0);
        return *this;
    }
    size_t size() const { return b.size(); }
};

}  // namespace duet::format::test
