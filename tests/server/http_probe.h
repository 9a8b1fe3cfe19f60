#pragma once
// Test helpers for talking raw HTTP/1.1 to the real `duet serve` (tests/server/*): a temp dir
// with a tiny model, raw sockets, one response read with a deadline, and the process's RSS.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "server_process.h"

namespace duet::test {

// A temp dir with a tiny model and a task store path, removed at the end.
struct ModelDir {
    std::filesystem::path dir;
    std::string model;
    explicit ModelDir(const std::string& tag) {
        dir = std::filesystem::temp_directory_path() / ("duet_server_" + tag + "_" + std::to_string(getpid()));
        std::filesystem::remove_all(dir);
        std::filesystem::create_directories(dir);
        model = (dir / "m.gguf").string();
        auto [rc, out] = run_command(duet_binary() + " gen-model --arch tiny-llama --dtype f32 --seed 3 -o " + model);
        if (rc != 0) throw std::runtime_error(out);
    }
    ~ModelDir() { std::filesystem::remove_all(dir); }
    std::vector<std::string> serve(const std::vector<std::string>& extra, bool auth = false) const {
        std::vector<std::string> a = {"--log-level",
                                      "error",
                                      "serve",
                                      "-m",
                                      model,
                                      "--port",
                                      "0",
                                      "--ctx",
                                      "256",
                                      "--threads",
                                      "1",
                                      "--tasks-db",
                                      (dir / "t.db").string()};
        if (!auth) a.push_back("--no-auth");
        a.insert(a.end(), extra.begin(), extra.end());
        return a;
    }
};

// The environment for a server whose peak RSS a test measures. Under ASan, freed blocks wait in
// a quarantine (256 MB by default) before their memory is reused, so every request body the
// server freed would count towards its peak: those servers run with the quarantine off. Without
// ASan the variable is ignored.
inline std::vector<std::string> rss_measuring_env() {
    const char* a = std::getenv("ASAN_OPTIONS");
    return {std::string("ASAN_OPTIONS=") + (a && *a ? std::string(a) + ":" : "") + "quarantine_size_mb=0"};
}

// Resets the process's peak RSS (VmHWM) so that a later read measures from here.
inline void reset_peak_rss(int pid) {
    std::ofstream clear("/proc/" + std::to_string(pid) + "/clear_refs");
    clear << "5";
}

inline int64_t status_kb(int pid, const std::string& field) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
    return -1;
}

inline int connect_to(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

inline bool send_all(int fd, const std::string& s) {
    return ::send(fd, s.data(), s.size(), MSG_NOSIGNAL) == ssize_t(s.size());
}

// One HTTP response: its head and Content-Length bytes of body (or what came before the
// server closed the connection, or timeout_ms passed).
inline std::string read_response(int fd, int timeout_ms = 30000) {
    std::string out;
    char buf[4096];
    for (;;) {
        const size_t head_end = out.find("\r\n\r\n");
        if (head_end != std::string::npos) {
            const size_t at = out.find("Content-Length: ");
            if (at != std::string::npos && at < head_end &&
                out.size() >= head_end + 4 + std::stoul(out.substr(at + 16)))
                return out.substr(0, head_end + 4 + std::stoul(out.substr(at + 16)));
        }
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, timeout_ms) <= 0) break;
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        out.append(buf, size_t(n));
    }
    return out;
}

inline std::string body_of(const std::string& response) { return response.substr(response.find("\r\n\r\n") + 4); }

// True when the server closed fd (EOF or reset) within timeout_ms.
inline bool closed_within(int fd, int timeout_ms) {
    char buf[4096];
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, timeout_ms) <= 0) return false;
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return true;
    }
}

}  // namespace duet::test
