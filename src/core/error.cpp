#include "core/error.h"

#include <cstdio>
#include <cstdlib>

namespace duet {

void check_failed(const char* file, int line, const char* expr, const std::string& msg) {
    std::fprintf(stderr, "duet: internal check failed at %s:%d: %s%s%s\n", file, line, expr,
                 msg.empty() ? "" : ": ", msg.c_str());
    std::fflush(stderr);
    std::abort();
}

}  // namespace duet
