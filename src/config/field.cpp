#include "config/field.h"

#include <charconv>
#include <cstdlib>

namespace duet::config {

std::string join_names(const std::vector<std::string>& names) {
    std::string out;
    for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
    return out;
}

std::string describe_allowed(FieldKind kind, double min, double max, const std::vector<std::string>& allowed) {
    switch (kind) {
        case FieldKind::INT: return fmt::format("an integer from {} to {}", min, max);
        case FieldKind::DOUBLE: return fmt::format("a number from {} to {}", min, max);
        case FieldKind::BOOL: return "true or false";
        case FieldKind::ENUM: return "one of: " + join_names(allowed);
        case FieldKind::STRING: break;
    }
    return "a string";
}

std::string show_value(const Value& v) {
    switch (v.kind) {
        case FieldKind::INT: return std::to_string(v.i);
        case FieldKind::DOUBLE: return fmt::format("{}", v.d);
        case FieldKind::BOOL: return v.b ? "true" : "false";
        default: return "\"" + v.s + "\"";
    }
}

bool parse_env_value(FieldKind kind, const std::string& text, Value& out) {
    out.kind = kind;
    const char* b = text.data();
    const char* e = b + text.size();
    switch (kind) {
        case FieldKind::INT: {
            auto r = std::from_chars(b, e, out.i);
            return !text.empty() && r.ec == std::errc() && r.ptr == e;
        }
        case FieldKind::DOUBLE: {
            char* end = nullptr;
            out.d = std::strtod(text.c_str(), &end);
            return !text.empty() && end == text.c_str() + text.size();
        }
        case FieldKind::BOOL:
            if (text == "true" || text == "1") return out.b = true, true;
            if (text == "false" || text == "0") return out.b = false, true;
            return false;
        default: out.s = text; return true;
    }
}

}  // namespace duet::config
