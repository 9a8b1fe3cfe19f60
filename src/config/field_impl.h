#pragma once
// Template part of field.h (included from it).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <type_traits>

#include <fmt/format.h>

#include "core/dtype.h"

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
        for (const auto& a : f.aliases) ok = ok || a == v.s;
        if (!ok)
            return fmt::format("{}: key '{}' = \"{}\" is not allowed (allowed: {}{}{})", where, f.dotted(), v.s,
                               join_names(f.allowed), f.aliases.empty() ? "" : "; also read as one of those: ",
                               join_names(f.aliases));
    }
    if (f.check) {
        std::string rule = f.check(v);
        if (!rule.empty())
            return fmt::format("{}: key '{}' = {} is not allowed (allowed: {})", where, f.dotted(), show_value(v), rule);
    }
    (void)allowed;
    return {};
}

template <class T, class S, class M>
Field<T> member_field(std::string section_name, std::string key, FieldKind kind, S T::*section, M S::*member,
                      const std::string& env_stem) {
    Field<T> f;
    f.section = std::move(section_name);
    f.key = std::move(key);
    f.kind = kind;
    f.env = "DUET_" + env_stem;
    for (auto& c : f.env) c = char(std::toupper(static_cast<unsigned char>(c)));
    f.set = [section, member](T& s, const Value& v) {
        if constexpr (std::is_same_v<M, int64_t>) (s.*section).*member = v.i;
        else if constexpr (std::is_same_v<M, double>) (s.*section).*member = v.d;
        else if constexpr (std::is_same_v<M, bool>) (s.*section).*member = v.b;
        else (s.*section).*member = v.s;
    };
    f.show = [section, member](const T& s) {
        const auto& x = (s.*section).*member;
        if constexpr (std::is_same_v<M, int64_t>) return std::to_string(x);
        else if constexpr (std::is_same_v<M, double>) return fmt::format("{}", x);
        else if constexpr (std::is_same_v<M, bool>) return std::string(x ? "true" : "false");
        else return "\"" + x + "\"";
    };
    return f;
}

template <class T>
Field<T> ranged(Field<T> f, double min, double max) {
    f.min = min;
    f.max = max;
    return f;
}

template <class T>
Field<T> one_of(Field<T> f, std::vector<std::string> allowed) {
    f.allowed = std::move(allowed);
    return f;
}

template <class T>
Field<T> dtype_enum(Field<T> f, std::vector<std::string> canonical) {
    f.allowed = std::move(canonical);
    for (const DTypeAlias& a : dtype_aliases())
        if (std::find(f.allowed.begin(), f.allowed.end(), a.name) != f.allowed.end()) f.aliases.push_back(a.alias);
    f.set = [set = f.set](T& out, const Value& v) {
        Value c = v;
        c.s = canonical_dtype_name(v.s);
        set(out, c);
    };
    return f;
}

template <class T>
Field<T> checked(Field<T> f, std::function<std::string(const Value&)> check) {
    f.check = std::move(check);
    return f;
}

}  // namespace duet::config
