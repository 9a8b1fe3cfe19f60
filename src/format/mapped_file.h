#pragma once
// A read-only view of a whole file's bytes: a private read-only memory map of a file on
// disk, the file read into anonymous memory (LoadMode::READ, the CLI default), or an owned copy of a
// byte buffer (for in-memory parsing, e.g. the fuzzer).
//
// Ownership: the MappedFile owns the mapping/buffer; data() stays valid until destruction.
// The data pointer is aligned to at least 64 bytes. Thread safety: immutable, any thread.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace duet::format {

// How a file's bytes come into memory.
//   MMAP  a private read-only mapping of the file (the default): pages come from the page cache
//         on first touch and are shared with it.
//   READ  the file read into anonymous memory (huge pages advised): a private copy, its pages
//         resident once open() returns. Decode streamed a q4_0 model's matrices 1.2-1.3x faster
//         from it than from the mapping on the 2-vCPU KVM guest these docs were measured on
//         (docs/performance.md); llama.cpp's --no-mmap.
enum class LoadMode { MMAP, READ };

class MappedFile {
  public:
    // (done_bytes, total_bytes), called after each chunk (64 MiB) and once at the end.
    using Progress = std::function<void(uint64_t, uint64_t)>;
    // Throws duet::Error "<path>: cannot open: <reason>" (missing, a directory, unreadable), and
    // for READ "<path>: cannot read: <reason>" (an I/O error, or no memory for the copy).
    // progress: READ only, as the file is read.
    static std::unique_ptr<MappedFile> open(const std::string& path, LoadMode mode = LoadMode::MMAP,
                                            const Progress& progress = nullptr);
    static std::unique_ptr<MappedFile> from_bytes(const void* data, size_t n_bytes);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const uint8_t* data() const { return data_; }
    size_t size_bytes() const { return size_bytes_; }

    // Hint that [offset, offset + n_bytes) will be read soon (madvise WILLNEED); no-op for buffers.
    void prefetch(size_t offset, size_t n_bytes) const;

    // How prefault() brought the pages in.
    enum class PrefaultMethod { NONE, POPULATE_READ, TOUCH };
    struct PrefaultResult {
        PrefaultMethod method = PrefaultMethod::NONE;  // NONE: an owned buffer (already resident) or an empty file
        uint64_t bytes = 0;                            // bytes of the mapping walked
    };
    // Reads the whole mapping into memory and maps every page into this process, so that the
    // first forward pays no page faults (the warm first request, issue 13.4): madvise
    // MADV_POPULATE_READ (Linux >= 5.14) where the kernel has it, else a touch pass reading one
    // byte per page. Blocks until done; a no-op for owned buffers and READ copies. Never fails: an I/O error
    // surfaces later as the same SIGBUS a plain read of the mapping would raise.
    PrefaultResult prefault(const Progress& progress = nullptr) const;
    // Bytes of the mapping whose pages are resident in memory (mincore); size_bytes() for
    // owned buffers and READ copies.
    uint64_t resident_bytes() const;
    bool is_mapped() const { return map_ != nullptr; }  // MMAP of a non-empty file

  private:
    MappedFile() = default;
    const uint8_t* data_ = nullptr;
    size_t size_bytes_ = 0;
    void* map_ = nullptr;  // mmap base when mapped
    size_t map_bytes_ = 0;
    uint8_t* owned_ = nullptr;  // aligned heap copy when from_bytes
    void* copy_ = nullptr;      // anonymous memory holding the file (READ)
    size_t copy_bytes_ = 0;
};

}  // namespace duet::format
