#pragma once
// Test helper: the mpirun of this machine (empty when absent: the MPI tests then skip) and
// the launcher prefix CI uses (it runs as root, on fewer cores than ranks).
#include <cstdio>
#include <string>
#include <vector>

namespace duet::test {

inline std::string mpirun_path() {
    std::string out;
    if (FILE* p = popen("command -v mpirun 2>/dev/null", "r")) {
        char buf[512];
        while (fgets(buf, sizeof buf, p)) out += buf;
        pclose(p);
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
}

inline std::vector<std::string> mpirun_prefix(int np) {
    return {mpirun_path(), "--allow-run-as-root", "--oversubscribe", "-np", std::to_string(np)};
}

}  // namespace duet::test
