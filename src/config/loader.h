#pragma once
// Applies a source (JSON document, TOML document, environment) to a config struct through
// its Field table. Unknown sections/keys and bad values go to the Diagnostics; a bad value
// leaves the field at its previous (default) value.
#include <nlohmann/json.hpp>

#include <map>
#include <set>

#include "config/diagnostics.h"
#include "config/env.h"
#include "config/field.h"
#include "core/error.h"
#include "core/toml_reader.h"

namespace duet::config {

const char* json_type_name(const nlohmann::json& j);

template <class T>
std::vector<std::string> field_sections(const std::vector<Field<T>>& fields) {
    std::vector<std::string> out;
    for (const auto& f : fields)
        if (std::find(out.begin(), out.end(), f.section) == out.end()) out.push_back(f.section);
    return out;
}

template <class T>
std::vector<std::string> section_keys(const std::vector<Field<T>>& fields, const std::string& section) {
    std::vector<std::string> out;
    for (const auto& f : fields)
        if (f.section == section) out.push_back(f.key);
    return out;
}

template <class T>
void apply_value(const Field<T>& f, const Value& v, const std::string& where, T& out, Diagnostics& diag) {
    std::string err = validate_value(f, v, where);
    if (!err.empty()) return diag.error(std::move(err));
    f.set(out, v);
}

// Parses JSON text, reporting every duplicate key of an object as an error naming its dotted
// path ("runtime.seq_len"): nlohmann keeps only the last, so a duplicate silently loses a value.
nlohmann::json parse_json_checked(const std::string& text, const std::string& file, Diagnostics& diag);

// `aliases`: other names of a section ("taotoken" -> "api"); keys are named as written.
template <class T>
void apply_json(const nlohmann::json& doc, const std::string& file, const std::vector<Field<T>>& fields, T& out,
                Diagnostics& diag, const std::map<std::string, std::string>& aliases = {}) {
    if (!doc.is_object()) return diag.error(fmt::format("{}: the top level must be an object, found {}", file, json_type_name(doc)));
    auto sections = field_sections(fields);
    for (const auto& [alias, _] : aliases) sections.push_back(alias);
    for (const auto& [written_sec, body] : doc.items()) {
        const auto al = aliases.find(written_sec);
        const std::string sec = al != aliases.end() ? al->second : written_sec;
        if (std::find(sections.begin(), sections.end(), written_sec) == sections.end()) {
            diag.error(fmt::format("{}: unknown key '{}' (allowed here: {})", file, written_sec, join_names(sections)));
            continue;
        }
        if (!body.is_object()) {
            diag.error(fmt::format("{}: key '{}' has type {}, expected object", file, written_sec, json_type_name(body)));
            continue;
        }
        for (const auto& [key, node] : body.items()) {
            const Field<T>* f = nullptr;
            for (const auto& c : fields)
                if (c.section == sec && c.key == key) f = &c;
            if (!f) {
                diag.error(fmt::format("{}: unknown key '{}.{}' (allowed here: {})", file, written_sec, key,
                                       join_names(section_keys(fields, sec))));
                continue;
            }
            const std::string written = written_sec + "." + key;
            Value v;
            v.kind = f->kind;
            const char* expected = nullptr;
            switch (f->kind) {
                case FieldKind::INT:
                    if (node.is_number_integer()) v.i = node.template get<int64_t>(); else expected = "integer";
                    break;
                case FieldKind::DOUBLE:
                    if (node.is_number()) v.d = node.template get<double>(); else expected = "number";
                    break;
                case FieldKind::BOOL:
                    if (node.is_boolean()) v.b = node.template get<bool>(); else expected = "boolean";
                    break;
                default:
                    if (node.is_string()) v.s = node.template get<std::string>(); else expected = "string";
            }
            if (expected) {
                diag.error(fmt::format("{}: key '{}' has type {}, expected {}", file, written, json_type_name(node),
                                       expected));
                continue;
            }
            std::string err = validate_value(*f, v, file);
            if (!err.empty()) {
                const std::string canon = "key '" + f->dotted() + "'";
                if (const size_t at = err.find(canon); at != std::string::npos) err.replace(at, canon.size(), "key '" + written + "'");
                diag.error(std::move(err));
                continue;
            }
            f->set(out, v);
        }
    }
}

template <class T>
void apply_toml(TomlDoc& doc, const std::vector<Field<T>>& fields, T& out, Diagnostics& diag) {
    const std::string& file = doc.root().file();
    const auto sections = field_sections(fields);
    for (const auto& sec : doc.root().keys()) {
        if (std::find(sections.begin(), sections.end(), sec) == sections.end()) {
            diag.error(fmt::format("{}: unknown key '{}' (allowed here: {})", file, sec, join_names(sections)));
            continue;
        }
        std::optional<TomlSection> s;
        try {
            s = doc.root().find_section(sec);
        } catch (const Error& e) {
            diag.error(e.what());
            continue;
        }
        for (const auto& key : s->keys()) {
            const Field<T>* f = nullptr;
            for (const auto& c : fields)
                if (c.section == sec && c.key == key) f = &c;
            if (!f) {
                diag.error(fmt::format("{}: unknown key '{}.{}' (allowed here: {})", file, sec, key,
                                       join_names(section_keys(fields, sec))));
                continue;
            }
            Value v;
            v.kind = f->kind;
            try {  // the TOML reader checks the type and reports it in its own (same) wording
                switch (f->kind) {
                    case FieldKind::INT: v.i = s->get_int(key, INT64_MIN, INT64_MAX); break;
                    case FieldKind::DOUBLE: v.d = s->get_double(key, -1e300, 1e300); break;
                    case FieldKind::BOOL: v.b = s->get_bool(key); break;
                    default: v.s = s->get_string(key);
                }
            } catch (const Error& e) {
                diag.error(e.what());
                continue;
            }
            apply_value(*f, v, file, out, diag);
        }
    }
}

template <class T>
void apply_env(const EnvMap& env, const std::vector<Field<T>>& fields, T& out, Diagnostics& diag) {
    for (const auto& f : fields) {
        auto it = env.find(f.env);
        if (it == env.end()) continue;
        const std::string where = "environment variable " + f.env;
        Value v;
        if (!parse_env_value(f.kind, it->second, v)) {
            diag.error(fmt::format("{}: key '{}' = \"{}\" is not allowed (allowed: {})", where, f.dotted(), it->second,
                                   describe_allowed(f.kind, f.min, f.max, f.allowed)));
            continue;
        }
        apply_value(f, v, where, out, diag);
    }
}

}  // namespace duet::config
