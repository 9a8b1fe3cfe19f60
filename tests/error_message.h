#pragma once
// The message of the duet::Error a call throws, or "(no error)": tests compare it with the
// exact text users see.
#include <functional>
#include <string>

#include "core/error.h"

namespace duet::test {

inline std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace duet::test
