#include "format/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "core/error.h"

namespace duet::format {

namespace {
constexpr size_t kChunkBytes = size_t(64) << 20;  // progress granularity (prefault, READ)
constexpr size_t kHugePageBytes = size_t(2) << 20;

// The whole file fd of n bytes in anonymous memory (huge pages advised), read in chunks.
void* read_copy(int fd, const std::string& path, size_t n, size_t& alloc, const MappedFile::Progress& progress) {
    alloc = (n + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    void* p = ::mmap(nullptr, alloc, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) fail("{}: cannot read: no memory for a {}-byte copy: {}", path, n, std::strerror(errno));
    ::madvise(p, alloc, MADV_HUGEPAGE);  // a hint: ignored where transparent huge pages are off
    auto* base = static_cast<uint8_t*>(p);
    for (size_t off = 0; off < n;) {
        const ssize_t got = ::pread(fd, base + off, std::min(kChunkBytes, n - off), off_t(off));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            const std::string why = got < 0 ? std::strerror(errno) : "the file shrank while it was read";
            ::munmap(p, alloc);
            fail("{}: cannot read: {}", path, why);
        }
        off += size_t(got);
        if (progress && (off % kChunkBytes == 0 || off == n)) progress(off, n);
    }
    ::mprotect(p, alloc, PROT_READ);
    return p;
}
}  // namespace

std::unique_ptr<MappedFile> MappedFile::open(const std::string& path, LoadMode mode, const Progress& progress) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO: no wait for a writer (refused below)
    if (fd < 0) fail("{}: cannot open: {}", path, std::strerror(errno));
    struct FdCloser {
        int fd;
        ~FdCloser() { ::close(fd); }  // a mapping keeps the file alive; a READ copy needs it no more
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) fail("{}: cannot open: {}", path, std::strerror(errno));
    if (!S_ISREG(st.st_mode)) fail("{}: cannot open: not a regular file", path);
    std::unique_ptr<MappedFile> m(new MappedFile());
    m->size_bytes_ = size_t(st.st_size);
    if (m->size_bytes_ == 0) {
        alignas(64) static const uint8_t kEmpty[64] = {};
        m->data_ = kEmpty;
    } else if (mode == LoadMode::READ) {
        m->copy_ = read_copy(fd, path, m->size_bytes_, m->copy_bytes_, progress);
        m->data_ = static_cast<const uint8_t*>(m->copy_);
    } else {
        void* p = ::mmap(nullptr, m->size_bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) fail("{}: cannot map {} bytes: {}", path, m->size_bytes_, std::strerror(errno));
        m->map_ = p;
        m->map_bytes_ = m->size_bytes_;
        m->data_ = static_cast<const uint8_t*>(p);
    }
    return m;
}

std::unique_ptr<MappedFile> MappedFile::from_bytes(const void* data, size_t n_bytes) {
    std::unique_ptr<MappedFile> m(new MappedFile());
    const size_t alloc = (n_bytes + 63) / 64 * 64 + 64;
    m->owned_ = static_cast<uint8_t*>(std::aligned_alloc(64, alloc));
    if (!m->owned_) throw std::bad_alloc();
    if (n_bytes) std::memcpy(m->owned_, data, n_bytes);
    m->data_ = m->owned_;
    m->size_bytes_ = n_bytes;
    return m;
}

MappedFile::~MappedFile() {
    if (map_) ::munmap(map_, map_bytes_);
    if (copy_) ::munmap(copy_, copy_bytes_);
    std::free(owned_);
}

void MappedFile::prefetch(size_t offset, size_t n_bytes) const {
    if (!map_ || offset >= size_bytes_) return;
    const size_t page = size_t(::sysconf(_SC_PAGESIZE));
    const size_t begin = offset / page * page;
    const size_t end = std::min(size_bytes_, offset + n_bytes);
    ::madvise(static_cast<uint8_t*>(map_) + begin, end - begin, MADV_WILLNEED);
}

namespace {
#ifndef MADV_POPULATE_READ
constexpr int MADV_POPULATE_READ = 22;  // linux/mman.h since 5.14; older headers lack the name
#endif
}  // namespace

MappedFile::PrefaultResult MappedFile::prefault(const Progress& progress) const {
    PrefaultResult r;
    if (!map_ || map_bytes_ == 0) return r;
    const size_t page = size_t(::sysconf(_SC_PAGESIZE));
    auto* base = static_cast<uint8_t*>(map_);
    r.method = PrefaultMethod::POPULATE_READ;
    for (size_t off = 0; off < map_bytes_; off += kChunkBytes) {
        const size_t n = std::min(kChunkBytes, map_bytes_ - off);
        // EINVAL: a kernel without MADV_POPULATE_READ; anything else (EINTR, ENOMEM...): the
        // touch pass still brings the pages in, only slower.
        if (r.method == PrefaultMethod::POPULATE_READ && ::madvise(base + off, n, MADV_POPULATE_READ) != 0)
            r.method = PrefaultMethod::TOUCH;
        if (r.method == PrefaultMethod::TOUCH) {
            volatile uint8_t sink = 0;
            for (size_t p = 0; p < n; p += page) sink = sink + base[off + p];
            (void)sink;
        }
        r.bytes += n;
        if (progress) progress(r.bytes, map_bytes_);
    }
    return r;
}

uint64_t MappedFile::resident_bytes() const {
    if (!map_) return size_bytes_;
    const size_t page = size_t(::sysconf(_SC_PAGESIZE));
    const size_t n_pages = (map_bytes_ + page - 1) / page;
    std::vector<unsigned char> vec(n_pages);
    if (::mincore(map_, map_bytes_, vec.data()) != 0) return 0;
    uint64_t resident = 0;
    for (size_t i = 0; i < n_pages; ++i)
        if (vec[i] & 1) resident += std::min(page, map_bytes_ - i * page);
    return resident;
}

}  // namespace duet::format
