#pragma once
// Reading a small text file named by a user (settings.json, config.toml, a grammar, a JSON
// schema) without trusting what the name points to: only a regular file is read (a FIFO is
// refused without waiting for a writer, /dev/zero without reading it), and never more than
// max_bytes. Errors name the flag or key that named the file, the path and the limit.
//
// Thread safety: pure function of the file system.
#include <cstddef>
#include <string>

namespace duet {

constexpr size_t kMaxConfigFileBytes = size_t(16) << 20;  // 16 MiB: configs are kilobytes

// The whole file; throws duet::Error "<what> <path>: ..." ("<path>: ..." when what is empty)
// when it cannot be opened, is not a regular file, or is larger than max_bytes.
std::string read_small_file(const std::string& path, const std::string& what, size_t max_bytes = kMaxConfigFileBytes);

}  // namespace duet
