#pragma once
// Generated models for runtime tests: written once per build tree by the real `duet gen-model`
// into build/test-models/, reused by later tests until the binary is rebuilt.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

#include <fmt/format.h>

namespace duet::test {

inline std::string duet_binary() { return std::string(DUET_BINARY_DIR) + "/duet"; }

// Path of `preset` in `dtype` with `seed`; generates it when missing. Empty on failure.
inline std::string generated_model(const std::string& preset, const std::string& dtype = "f32", int seed = 42) {
    const std::filesystem::path dir = std::filesystem::path(DUET_BINARY_DIR) / "test-models";
    std::filesystem::create_directories(dir);
    const std::filesystem::path file = dir / fmt::format("{}-{}-s{}.gguf", preset, dtype, seed);
    // Reuse a file written by this very binary; a rebuilt `duet` (maybe a changed writer) rewrites it.
    std::error_code ec;
    if (std::filesystem::exists(file) &&
        std::filesystem::last_write_time(file, ec) >= std::filesystem::last_write_time(duet_binary(), ec))
        return file.string();
    const std::string tmp = file.string() + fmt::format(".{}.tmp.gguf", ::getpid());
    const std::string cmd = fmt::format("'{}' gen-model --arch {} --dtype {} --seed {} -o '{}' > /dev/null", duet_binary(),
                                        preset, dtype, seed, tmp);
    if (std::system(cmd.c_str()) != 0) return "";
    std::filesystem::rename(tmp, file);
    return file.string();
}

inline std::string shared_model(const std::string& name) {
    const std::filesystem::path p = std::filesystem::path(DUET_SHARED_DIR) / "models" / name;
    return std::filesystem::exists(p) ? p.string() : "";
}

}  // namespace duet::test
