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

std::unique_ptr<MappedFile> MappedFile::open(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("{}: cannot open: {}", path, std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        int e = errno;
        ::close(fd);
        fail("{}: cannot open: {}", path, std::strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        fail("{}: cannot open: not a regular file", path);
    }
    std::unique_ptr<MappedFile> m(new MappedFile());
    m->size_bytes_ = size_t(st.st_size);
    if (m->size_bytes_ > 0) {
        void* p = ::mmap(nullptr, m->size_bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            ::close(fd);
            fail("{}: cannot map {} bytes: {}", path, m->size_bytes_, std::strerror(e));
        }
        m->map_ = p;
        m->map_bytes_ = m->size_bytes_;
        m->data_ = static_cast<const uint8_t*>(p);
    } else {
        alignas(64) static const uint8_t kEmpty[64] = {};
        m->data_ = kEmpty;
    }
    ::close(fd);  // the mapping keeps the file alive
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
constexpr size_t kPrefaultChunkBytes = size_t(64) << 20;  // progress granularity
}  // namespace

MappedFile::PrefaultResult MappedFile::prefault(const Progress& progress) const {
    PrefaultResult r;
    if (!map_ || map_bytes_ == 0) return r;
    const size_t page = size_t(::sysconf(_SC_PAGESIZE));
    auto* base = static_cast<uint8_t*>(map_);
    r.method = PrefaultMethod::POPULATE_READ;
    for (size_t off = 0; off < map_bytes_; off += kPrefaultChunkBytes) {
        const size_t n = std::min(kPrefaultChunkBytes, map_bytes_ - off);
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
