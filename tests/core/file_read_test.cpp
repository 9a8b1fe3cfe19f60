// read_small_file: regular files only (a FIFO without waiting, /dev/zero without reading), a
// size cap, errors naming the flag and the path.
#include "core/file_read.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace duet {
namespace {

std::string error_of(const std::string& path, const std::string& what, size_t max = kMaxConfigFileBytes) {
    try {
        read_small_file(path, what, max);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(FileRead, DevZeroIsRefusedWithoutReadingIt) {
    EXPECT_EQ(error_of("/dev/zero", "--settings"),
              "--settings /dev/zero: not a regular file (a device or socket; allowed: a regular file)");
}

TEST(FileRead, AFifoIsRefusedWithoutWaitingForAWriter) {
    const std::string fifo =
        (std::filesystem::temp_directory_path() / ("duet_fifo_" + std::to_string(getpid()))).string();
    ::unlink(fifo.c_str());
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_EQ(error_of(fifo, "--config"),
              "--config " + fifo + ": not a regular file (a FIFO; allowed: a regular file)");
    ::unlink(fifo.c_str());
}

TEST(FileRead, SizeCapAndContent) {
    const std::string path =
        (std::filesystem::temp_directory_path() / ("duet_fr_" + std::to_string(getpid()))).string();
    std::ofstream(path) << "0123456789";
    EXPECT_EQ(read_small_file(path, "x"), "0123456789");
    EXPECT_EQ(error_of(path, "", 4), path + ": the file has 10 bytes, more than the limit of 4 bytes");
    EXPECT_EQ(error_of("/nonexistent/f", ""), "/nonexistent/f: cannot open file");
    EXPECT_EQ(error_of("/tmp", "--grammar"),
              "--grammar /tmp: not a regular file (a directory; allowed: a regular file)");
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace duet
