#pragma once
// Command-line helpers shared by the bench programs (bench_engine, bench_server,
// bench_norm_fusion, bench_pim_gemv): one error form, "<program>: error: <message>" on stderr
// and exit status 2, the status duet's own CLI uses for bad input (docs/cli.md).
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace duet::bench {

[[noreturn]] inline void usage_error(std::string_view program, const std::string& message) {
    std::fprintf(stderr, "%.*s: error: %s\n", int(program.size()), program.data(), message.c_str());
    std::exit(2);
}

// `text` as a whole decimal integer in [lo, hi], else usage_error naming `what` (the flag, or a
// positional argument's name) and the allowed range.
inline long parse_int(std::string_view program, std::string_view what, std::string_view text, long lo,
                      long hi = 1L << 24) {
    long n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || n < lo || n > hi)
        usage_error(program, std::string(what) + " needs an integer from " + std::to_string(lo) + " to " +
                                 std::to_string(hi) + ", got '" + std::string(text) + "'");
    return n;
}

// The value after flag argv[i] (advancing i), else usage_error "<flag> needs a value".
inline const char* flag_value(std::string_view program, int argc, char** argv, int& i) {
    if (i + 1 >= argc) usage_error(program, std::string(argv[i]) + " needs a value");
    return argv[++i];
}

}  // namespace duet::bench
