#pragma once
// A read-only view of a whole file's bytes: a private read-only memory map of a file on
// disk, or an owned copy of a byte buffer (for in-memory parsing, e.g. the fuzzer).
//
// Ownership: the MappedFile owns the mapping/buffer; data() stays valid until destruction.
// The data pointer is aligned to at least 64 bytes. Thread safety: immutable, any thread.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace duet::format {

class MappedFile {
  public:
    // Throws duet::Error "<path>: cannot open: <reason>" (missing, a directory, unreadable).
    static std::unique_ptr<MappedFile> open(const std::string& path);
    static std::unique_ptr<MappedFile> from_bytes(const void* data, size_t n_bytes);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const uint8_t* data() const { return data_; }
    size_t size_bytes() const { return size_bytes_; }

    // Hint that [offset, offset + n_bytes) will be read soon (madvise WILLNEED); no-op for buffers.
    void prefetch(size_t offset, size_t n_bytes) const;

  private:
    MappedFile() = default;
    const uint8_t* data_ = nullptr;
    size_t size_bytes_ = 0;
    void* map_ = nullptr;  // mmap base when mapped
    size_t map_bytes_ = 0;
    uint8_t* owned_ = nullptr;  // aligned heap copy when from_bytes
};

}  // namespace duet::format
