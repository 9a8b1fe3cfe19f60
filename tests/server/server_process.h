#pragma once
// Test helper: runs the real `duet` binary as a child process (posix_spawn), reads the port it
// printed, and kills it (SIGKILL or SIGTERM) on request or at destruction.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace duet::test {

inline std::string duet_binary() { return std::string(DUET_BINARY_DIR) + "/duet"; }

// Runs a command to completion; returns {exit code, stdout+stderr}.
inline std::pair<int, std::string> run_command(const std::string& cmd) {
    std::string out;
    FILE* p = popen((cmd + " 2>&1").c_str(), "r");
    if (!p) throw std::runtime_error("popen failed");
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int st = pclose(p);
    return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

class ServerProcess {
public:
    // args after the binary; env entries "NAME=value" added to this process's environment (or
    // replacing the variable of that name);
    // launcher (optional): a program and its arguments that start the binary (mpirun -np 2);
    // binary (optional): another duet build (bench_server --duet compares two).
    ServerProcess(const std::vector<std::string>& args, const std::vector<std::string>& extra_env,
                  const std::vector<std::string>& launcher = {}, const std::string& binary = duet_binary()) {
        int fds[2];
        if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
        posix_spawn_file_actions_addclose(&fa, fds[0]);
        std::vector<std::string> argv_s = launcher;
        argv_s.push_back(binary);
        argv_s.insert(argv_s.end(), args.begin(), args.end());
        std::vector<char*> argv;
        for (auto& a : argv_s) argv.push_back(a.data());
        argv.push_back(nullptr);
        // extra_env replaces a variable of the same name (getenv would find the first one).
        std::vector<std::string> env_s;
        for (char** e = environ; *e; ++e) {
            const std::string v(*e);
            const std::string name = v.substr(0, v.find('=') + 1);
            bool replaced = false;
            for (const auto& x : extra_env) replaced = replaced || x.rfind(name, 0) == 0;
            if (!replaced) env_s.push_back(v);
        }
        env_s.insert(env_s.end(), extra_env.begin(), extra_env.end());
        std::vector<char*> envp;
        for (auto& e : env_s) envp.push_back(e.data());
        envp.push_back(nullptr);
        if (posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), envp.data()) != 0)
            throw std::runtime_error("cannot start " + argv_s[0]);
        posix_spawn_file_actions_destroy(&fa);
        close(fds[1]);
        // The first line names the address: "duet serve: ... on http://127.0.0.1:PORT (...)".
        std::string line;
        char c;
        while (read(fds[0], &c, 1) == 1 && c != '\n') line += c;
        close(fds[0]);
        const size_t at = line.find("http://127.0.0.1:");
        if (at == std::string::npos) {
            kill_now();
            throw std::runtime_error("server did not start: '" + line + "'");
        }
        port_ = std::stoi(line.substr(at + 17));
    }
    ~ServerProcess() { kill_now(); }
    int port() const { return port_; }
    int pid() const { return int(pid_); }
    void kill_now(int sig = SIGKILL) {
        if (pid_ <= 0) return;
        ::kill(pid_, sig);
        int st;
        waitpid(pid_, &st, 0);
        pid_ = -1;
    }

private:
    pid_t pid_ = -1;
    int port_ = 0;
};

}  // namespace duet::test
