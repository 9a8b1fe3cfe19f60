// libFuzzer target for the settings.json and config.toml loaders with their DUET_* environment
// overrides (config/settings.h, config/coop_config.h). Any file text and any environment must
// load or end in one duet::Error (normal mode); in collect-all mode (`duet doctor`) nothing may
// throw at all: every problem is recorded. Input layout (the seeds are readable):
//   byte 0: bit 0 = 0 settings.json, 1 config.toml; bit 1 = collect-all mode
//   then "NAME=VALUE" lines up to a line "---" (the environment), then the file text.
// Without a "---" line the whole rest is the file and the environment is empty.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "config/coop_config.h"
#include "config/settings.h"
#include "core/error.h"
#include "fuzz_util.h"

namespace {

const std::string& scratch_file() {
    static const std::string path = [] {
        const char* dir = std::getenv("TMPDIR");
        std::string p = std::string(dir && *dir ? dir : "/tmp") + "/duet-config-fuzz-XXXXXX";
        const int fd = mkstemp(p.data());
        if (fd < 0) duet::fuzz::unexpected("mkstemp failed");
        close(fd);
        return p;
    }();
    return path;
}

void write_file(const std::string& path, std::string_view text) {
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) duet::fuzz::unexpected("cannot write the scratch file");
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
}

duet::config::EnvMap parse_env(std::string_view text) {
    duet::config::EnvMap env;
    while (!text.empty()) {
        const size_t nl = text.find('\n');
        const std::string_view line = text.substr(0, nl);
        const size_t eq = line.find('=');
        if (eq != std::string_view::npos) env[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
        if (nl == std::string_view::npos) break;
        text.remove_prefix(nl + 1);
    }
    return env;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const bool toml = data[0] & 1, collect = data[0] & 2;
    std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
    duet::config::EnvMap env;
    if (const size_t sep = rest.find("\n---\n"); sep != std::string_view::npos) {
        env = parse_env(rest.substr(0, sep));
        rest.remove_prefix(sep + 5);
    }
    const std::string& path = scratch_file();
    write_file(path, rest);
    duet::config::Diagnostics diag(collect);
    try {
        if (toml)
            (void)duet::config::load_coop_config(path, env, diag);
        else
            (void)duet::config::load_settings(path, env, {"Ascend910B", "Ascend310P"}, diag);
    } catch (const duet::Error& e) {
        if (collect) duet::fuzz::unexpected("collect-all load threw", &e);
    } catch (const std::exception& e) {
        duet::fuzz::unexpected("exception other than duet::Error", &e);
    }
    return 0;
}
