#pragma once
// A budget for JSON text from outside (request bodies, tool-call arguments, model output),
// checked on the text before any parser or recursive walk sees it: the nesting depth and the
// keys of any one object. The scan is iterative, O(length), and keeps one counter per open
// level (at most max_depth + 1), so no input controls a recursion depth or an allocation.
// Every JSON value that passed it can then be parsed, copied, dumped and walked recursively
// (nlohmann's dump, py_json) without a stack overflow, and objects with very many keys (whose
// ordered parse is quadratic) are refused before parsing.
//
// Thread safety: pure functions.
#include <cstddef>
#include <string>
#include <string_view>

namespace duet {

struct JsonBudget {
    size_t max_depth = 64;          // nested objects + arrays (the outermost value counts 1)
    size_t max_object_keys = 1024;  // keys of one object
};

// "" when `text` stays within the budget (whether or not it is valid JSON: the parser decides
// that), else a message that starts with `what` and names the limit, e.g.
// "request body is nested deeper than 64 levels (allowed: at most 64 nested objects and arrays)".
std::string json_budget_error(std::string_view text, const JsonBudget& budget, std::string_view what);

}  // namespace duet
