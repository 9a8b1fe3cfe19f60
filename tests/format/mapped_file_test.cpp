// MappedFile::prefault (the warm first request, issue 13.4): after it every page of the mapping
// is resident (mincore) and reading the whole file takes no page faults; without it, a file
// evicted from the page cache is not resident after open and reading it faults.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <cstring>
#include <random>
#include <vector>

#include "format/mapped_file.h"
#include "../page_faults.h"

namespace duet::format {
namespace {

constexpr size_t kFileBytes = size_t(8) << 20;

// A file of kFileBytes on disk (the build tree: a real filesystem, not tmpfs), flushed so
// that the page cache can drop it.
std::string write_file(const std::string& name) {
    const std::string path = (std::filesystem::path(DUET_BINARY_DIR) / name).string() + "." + std::to_string(::getpid());
    std::vector<char> bytes(kFileBytes);
    std::mt19937 rng(7);
    for (char& b : bytes) b = char(rng());
    {
        std::ofstream f(path, std::ios::binary);
        f.write(bytes.data(), std::streamsize(bytes.size()));
    }
    const int fd = ::open(path.c_str(), O_RDONLY);
    ::fsync(fd);
    ::close(fd);
    return path;
}

// Asks the kernel to drop the file's clean pages from the page cache.
void evict(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
}

using test::faults_reading;

TEST(MappedFilePrefault, MakesEveryPageResidentAndReadsFaultFree) {
    const std::string path = write_file("prefault_test.bin");
    evict(path);
    auto m = MappedFile::open(path);
    const uint64_t before = m->resident_bytes();
    const MappedFile::PrefaultResult r = m->prefault();
    EXPECT_NE(r.method, MappedFile::PrefaultMethod::NONE);
    EXPECT_EQ(r.bytes, kFileBytes);
    EXPECT_EQ(m->resident_bytes(), kFileBytes);
    // every page is mapped into this process: reading the whole file faults (almost) never
    const int64_t n_pages = int64_t(kFileBytes / size_t(::sysconf(_SC_PAGESIZE)));
    EXPECT_LT(faults_reading(*m), n_pages / 64);
    if (before == kFileBytes) GTEST_SKIP() << "the page cache kept the file after POSIX_FADV_DONTNEED";
    EXPECT_LT(before, kFileBytes / 2);
    std::filesystem::remove(path);
}

TEST(MappedFilePrefault, WithoutItAnEvictedFileIsNotResidentAndReadingFaults) {
    const std::string path = write_file("no_prefault_test.bin");
    evict(path);
    auto m = MappedFile::open(path);
    const uint64_t before = m->resident_bytes();
    if (before == kFileBytes) GTEST_SKIP() << "the page cache kept the file after POSIX_FADV_DONTNEED";
    EXPECT_LT(before, kFileBytes / 2);
    // a cold read faults at least once per fault-around window (16 pages by default)
    const int64_t n_pages = int64_t(kFileBytes / size_t(::sysconf(_SC_PAGESIZE)));
    EXPECT_GE(faults_reading(*m), n_pages / 64);
    std::filesystem::remove(path);
}

TEST(MappedFilePrefault, ProgressReportsEveryChunkUpToTheTotal) {
    const std::string path = write_file("prefault_progress_test.bin");
    auto m = MappedFile::open(path);
    std::vector<std::pair<uint64_t, uint64_t>> calls;
    m->prefault([&](uint64_t done, uint64_t total) { calls.emplace_back(done, total); });
    ASSERT_FALSE(calls.empty());
    EXPECT_EQ(calls.back(), std::make_pair(uint64_t(kFileBytes), uint64_t(kFileBytes)));
    std::filesystem::remove(path);
}

TEST(MappedFilePrefault, AnOwnedBufferIsAlreadyResident) {
    const std::vector<uint8_t> bytes(1000, 1);
    auto m = MappedFile::from_bytes(bytes.data(), bytes.size());
    EXPECT_EQ(m->prefault().method, MappedFile::PrefaultMethod::NONE);
    EXPECT_EQ(m->resident_bytes(), 1000u);
}

// LoadMode::READ (the CLI's default, runtime::load_model; `--mmap` maps): the file's bytes in
// anonymous memory, resident at once (an evicted file too), nothing to pre-fault, progress per
// 64 MiB chunk and at the end; a missing file is the same error as for a mapping.
TEST(MappedFileRead, HoldsTheFileBytesResidentWithNothingToPrefault) {
    const std::string path = write_file("read_test.bin");
    evict(path);
    std::vector<std::pair<uint64_t, uint64_t>> calls;
    auto m = MappedFile::open(path, LoadMode::READ, [&](uint64_t d, uint64_t t) { calls.emplace_back(d, t); });
    EXPECT_FALSE(m->is_mapped());
    ASSERT_EQ(m->size_bytes(), kFileBytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(m->data()) % 64, 0u);
    std::vector<char> bytes(kFileBytes);
    std::ifstream(path, std::ios::binary).read(bytes.data(), std::streamsize(bytes.size()));
    EXPECT_EQ(std::memcmp(m->data(), bytes.data(), kFileBytes), 0);
    EXPECT_EQ(m->resident_bytes(), kFileBytes);
    EXPECT_EQ(faults_reading(*m), 0);
    EXPECT_EQ(m->prefault().method, MappedFile::PrefaultMethod::NONE);
    ASSERT_EQ(calls.size(), 1u);  // one chunk: the file is smaller than 64 MiB
    EXPECT_EQ(calls.back(), std::make_pair(uint64_t(kFileBytes), uint64_t(kFileBytes)));
    std::filesystem::remove(path);
}

TEST(MappedFileRead, MissingFilesAndDirectoriesAreTheMappingsErrors) {
    const std::string missing = (std::filesystem::path(DUET_BINARY_DIR) / "no_such_read_test.bin").string();
    for (LoadMode mode : {LoadMode::MMAP, LoadMode::READ}) {
        try {
            MappedFile::open(missing, mode);
            ADD_FAILURE() << "no error";
        } catch (const std::exception& e) {
            EXPECT_EQ(std::string(e.what()), missing + ": cannot open: No such file or directory");
        }
        try {
            MappedFile::open(DUET_BINARY_DIR, mode);
            ADD_FAILURE() << "no error";
        } catch (const std::exception& e) {
            EXPECT_EQ(std::string(e.what()), std::string(DUET_BINARY_DIR) + ": cannot open: not a regular file");
        }
    }
}

}  // namespace
}  // namespace duet::format
