#pragma once
// Runs `duet bench` for the CLI tests with a report file of its own and returns the exit status,
// the output (stdout and stderr) and the parsed report (null when none was written).
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <string>

#include "run_command.h"

namespace duet::test {

struct BenchRun {
    int code = -1;
    std::string out;
    nlohmann::json report;
};

// `env_prefix` goes before the binary ("env VAR=1 "); `stem` names the report files (stem_N.json in
// the build folder); without `verdict_exit` the run adds --no-verdict-exit.
inline BenchRun run_bench(const std::string& args, const std::string& stem, const std::string& env_prefix = "",
                          const std::string& log_level = "off", bool verdict_exit = false) {
    static int counter = 0;
    const std::string report = std::string(DUET_BINARY_DIR) + "/" + stem + "_" + std::to_string(counter++) + ".json";
    std::remove(report.c_str());
    const std::string cmd = env_prefix + std::string(DUET_BINARY_DIR) + "/duet --log-level " + log_level + " bench " +
                            args + (verdict_exit ? "" : " --no-verdict-exit") + " --report " + report + " 2>&1";
    const CommandResult c = run_command(cmd);
    BenchRun r{c.code, c.out, nullptr};
    std::ifstream in(report);
    if (in) r.report = nlohmann::json::parse(in);
    return r;
}

}  // namespace duet::test
