#include "core/file_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace duet {

std::string read_small_file(const std::string& path, const std::string& what, size_t max_bytes) {
    const std::string name = what.empty() ? path : what + " " + path;
    // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) fail("{}: cannot open file", name);
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        const bool dir = S_ISDIR(st.st_mode);
        ::close(fd);
        fail("{}: not a regular file ({}; allowed: a regular file)", name,
             dir                    ? "a directory"
             : S_ISFIFO(st.st_mode) ? "a FIFO"
                                    : "a device or socket");
    }
    if (uint64_t(st.st_size) > max_bytes) {
        ::close(fd);
        fail("{}: the file has {} bytes, more than the limit of {} bytes", name, uint64_t(st.st_size), max_bytes);
    }
    std::string text;
    char buf[65536];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int err = errno;
            ::close(fd);
            fail("{}: cannot read file: {}", name, std::strerror(err));
        }
        if (n == 0) break;
        if (text.size() + size_t(n) > max_bytes) {  // grew while read
            ::close(fd);
            fail("{}: the file has more than the limit of {} bytes", name, max_bytes);
        }
        text.append(buf, size_t(n));
    }
    ::close(fd);
    return text;
}

}  // namespace duet
