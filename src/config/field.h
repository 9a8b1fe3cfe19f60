#pragma once
// A table-driven schema for the two user configuration files (settings.json, config.toml):
// one Field per key with its type, range or allowed values and a setter. The JSON reader,
// the TOML reader and the DUET_* environment overrides share this table, so the three
// sources validate identically and produce the same error wording:
//   "<file>: key '<section.key>' = <value> is out of range (allowed: <min> to <max>)"
// Thread safety: plain values; the tables are immutable after construction.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace duet::config {

enum class FieldKind { INT, DOUBLE, BOOL, STRING, ENUM };

// A parsed value before validation against the field's range.
struct Value {
    FieldKind kind = FieldKind::STRING;
    int64_t i = 0;
    double d = 0;
    bool b = false;
    std::string s;
};

template <class T>
struct Field {
    std::string section;  // "runtime", "pim", ...
    std::string key;      // "seq_len"
    FieldKind kind = FieldKind::STRING;
    double min = 0, max = 0;            // INT / DOUBLE range, inclusive
    std::vector<std::string> allowed;   // ENUM values
    std::vector<std::string> aliases;   // ENUM: other accepted spellings; set() reads each as its value
    std::string env;                    // environment override variable: DUET_SEQ_LEN
    std::function<void(T&, const Value&)> set;
    std::function<std::string(const T&)> show;  // the current value as written in the file
    // Extra rule beyond type and range; returns "" when fine, else what is allowed
    // (e.g. "a power of two"). Used for alignment, block sizes, URLs, variable names.
    std::function<std::string(const Value&)> check;

    std::string dotted() const { return section + "." + key; }
};

// "an integer from 1 to 1048576", "one of: a, b", "true or false", "a string".
std::string describe_allowed(FieldKind kind, double min, double max, const std::vector<std::string>& allowed);

// Range/enum/extra validation of an already typed value. Returns "" when valid, otherwise the
// full message "<where>: key '<dotted>' = <value> is ... (allowed: ...)".
template <class T>
std::string validate_value(const Field<T>& f, const Value& v, const std::string& where);

std::string show_value(const Value& v);  // 42, 0.05, true, "text"

// Parses the text of an environment variable as `kind`; false when it does not parse.
bool parse_env_value(FieldKind kind, const std::string& text, Value& out);

std::string join_names(const std::vector<std::string>& names);  // "a, b, c"

// A field bound to `member` of the section `section` of T (settings.json's and config.toml's
// schema tables are built from these); its override variable is DUET_<env_stem> upper-cased.
template <class T, class S, class M>
Field<T> member_field(std::string section_name, std::string key, FieldKind kind, S T::*section, M S::*member,
                      const std::string& env_stem);
template <class T>
Field<T> ranged(Field<T> f, double min, double max);  // numeric range, inclusive
template <class T>
Field<T> one_of(Field<T> f, std::vector<std::string> allowed);  // ENUM values
// A dtype-valued ENUM: `canonical` names (core/dtype.h), the aliases of core/dtype.h that stand
// for one of them accepted too and stored as the canonical name.
template <class T>
Field<T> dtype_enum(Field<T> f, std::vector<std::string> canonical);
template <class T>
Field<T> checked(Field<T> f, std::function<std::string(const Value&)> check);  // extra rule

}  // namespace duet::config

#include "config/field_impl.h"
