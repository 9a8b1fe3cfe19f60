#pragma once
// Runs a shell command for the CLI tests and returns its exit status and its output (the caller
// adds `2>&1` to take stderr too). Status -1 when the command did not exit normally.
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace duet::test {

struct CommandResult {
    int code = -1;
    std::string out;
};

inline CommandResult run_command(const std::string& cmd) {
    CommandResult r;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

}  // namespace duet::test
