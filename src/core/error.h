#pragma once
// Error handling, three tiers (CONTRIBUTING.md):
//  1. bugs: DUET_CHECK(cond, fmt, ...) prints file:line and aborts;
//  2. bad input, files, config: throw duet::Error whose message names the file/key/parameter,
//     the value and what is allowed; the CLI prints it on one line and exits 2, the server
//     turns it into an OpenAI error object;
//  3. expected outcomes (KV full, queue full): return values, not exceptions.
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace duet {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Throws duet::Error with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
    throw Error(fmt::format(f, std::forward<Args>(args)...));
}

[[noreturn]] void check_failed(const char* file, int line, const char* expr, const std::string& msg);

}  // namespace duet

#define DUET_CHECK(cond, ...)                                                             \
    do {                                                                                  \
        if (!(cond)) [[unlikely]]                                                         \
            ::duet::check_failed(__FILE__, __LINE__, #cond, ::fmt::format("" __VA_ARGS__)); \
    } while (0)
