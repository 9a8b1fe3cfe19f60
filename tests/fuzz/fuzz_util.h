#pragma once
// Shared by the libFuzzer targets (scripts/fuzz.sh): the rule every target enforces is that any
// input either succeeds or ends in the component's documented error type; anything else (another
// exception, a crash, a sanitizer report, a hang) is a finding. An unexpected exception aborts,
// so libFuzzer keeps the input as crash-*.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

namespace duet::fuzz {

[[noreturn]] inline void unexpected(const char* what, const std::exception* e = nullptr) {
    std::fprintf(stderr, "fuzz: %s%s%s\n", what, e ? ": " : "", e ? e->what() : "");
    std::abort();
}

}  // namespace duet::fuzz
