#include "core/json_budget.h"

#include <fmt/format.h>

#include <vector>

namespace duet {

std::string json_budget_error(std::string_view text, const JsonBudget& budget, std::string_view what) {
    // One entry per open level: whether it is an object, and its keys so far.
    struct Level {
        bool object;
        size_t keys;
    };
    std::vector<Level> open;
    open.reserve(std::min<size_t>(budget.max_depth, 256) + 1);
    bool in_string = false, escaped = false;
    for (const char c : text) {
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
            continue;
        }
        switch (c) {
            case '"':
                in_string = true;
                break;
            case '{':
            case '[':
                if (open.size() >= budget.max_depth)
                    return fmt::format(
                        "{} is nested deeper than {} levels (allowed: at most {} nested objects and "
                        "arrays)",
                        what, budget.max_depth, budget.max_depth);
                open.push_back({c == '{', 0});
                break;
            case '}':
            case ']':
                if (!open.empty()) open.pop_back();
                break;
            case ':':  // one per key of the innermost object
                if (!open.empty() && open.back().object && ++open.back().keys > budget.max_object_keys)
                    return fmt::format("{} has an object with more than {} keys (allowed: at most {} keys per object)",
                                       what, budget.max_object_keys, budget.max_object_keys);
                break;
            default:
                break;
        }
    }
    return "";
}

}  // namespace duet
