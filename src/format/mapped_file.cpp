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

}  // namespace duet::format
