#pragma once
// Writes a scratch file under the build directory for a config test.
#include <fstream>
#include <string>

inline std::string write_test_file(const std::string& name, const std::string& text) {
    std::string path = std::string(DUET_BINARY_DIR) + "/config_test_" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
}
