#pragma once
// Template part of field.h (included from it).
#include <cmath>

#include <fmt/format.h>

namespace duet::config {

template <class T>
std::string validate_value(const Field<T>& f, const Value& v, const std::string& where) {
    const std::string allowed = describe_allowed(f.kind, f.min, f.max, f.allowed);
    if (f.kind == FieldKind::INT || f.kind == FieldKind::DOUBLE) {
        const double x = f.kind == FieldKind::INT ? double(v.i) : v.d;
        if (!(x >= f.min && x <= f.max))
            return fmt::format("{}: key '{}' = {} is out of range (allowed: {} to {})", where, f.dotted(),
                               show_value(v), f.min, f.max);
    }
    if (f.kind == FieldKind::ENUM) {
        bool ok = false;
        for (const auto& a : f.allowed) ok = ok || a == v.s;
        if (!ok)
            return fmt::format("{}: key '{}' = \"{}\" is not allowed (allowed: {})", where, f.dotted(), v.s,
                               join_names(f.allowed));
    }
    if (f.check) {
        std::string rule = f.check(v);
        if (!rule.empty())
            return fmt::format("{}: key '{}' = {} is not allowed (allowed: {})", where, f.dotted(), show_value(v), rule);
    }
    (void)allowed;
    return {};
}

}  // namespace duet::config
