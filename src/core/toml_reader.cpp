#include "core/toml_reader.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "core/error.h"

namespace duet {
namespace {

std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) {
        if (!s.empty()) s += ", ";
        s += x;
    }
    return s;
}

const char* node_type_name(const toml::node& n) {
    switch (n.type()) {
        case toml::node_type::string: return "string";
        case toml::node_type::integer: return "integer";
        case toml::node_type::floating_point: return "float";
        case toml::node_type::boolean: return "boolean";
        case toml::node_type::table: return "table";
        case toml::node_type::array: return "array";
        default: return "date/time";
    }
}

}  // namespace

TomlSection::TomlSection(std::shared_ptr<const std::string> file, std::string prefix, const toml::table* table)
    : file_(std::move(file)), prefix_(std::move(prefix)), table_(table) {}

bool TomlSection::has(const std::string& key) const { return table_->contains(key); }

std::string TomlSection::dotted(const std::string& key) const { return prefix_.empty() ? key : prefix_ + "." + key; }

std::vector<std::string> TomlSection::keys() const {
    std::vector<std::string> k;
    for (const auto& [name, _] : *table_) k.emplace_back(name.str());
    return k;
}

const toml::node* TomlSection::node(const std::string& key) {
    const toml::node* n = table_->get(key);
    if (n) used_.insert(key);
    return n;
}

void TomlSection::wrong_type(const std::string& key, const char* expected) const {
    const toml::node* n = table_->get(key);
    fail("{}: key '{}' has type {}, expected {}", *file_, dotted(key), n ? node_type_name(*n) : "none", expected);
}

double TomlSection::get_double(const std::string& key, double min, double max) {
    const toml::node* n = node(key);
    if (!n) fail("{}: missing key '{}' (a number between {} and {})", *file_, dotted(key), min, max);
    if (!n->is_number()) wrong_type(key, "number");
    const double v = n->is_integer() ? double(n->as_integer()->get()) : n->as_floating_point()->get();
    if (!(v >= min && v <= max))
        fail("{}: key '{}' = {} is out of range (allowed: {} to {})", *file_, dotted(key), v, min, max);
    return v;
}

int64_t TomlSection::get_int(const std::string& key, int64_t min, int64_t max) {
    const toml::node* n = node(key);
    if (!n) fail("{}: missing key '{}' (an integer between {} and {})", *file_, dotted(key), min, max);
    if (!n->is_integer()) wrong_type(key, "integer");
    const int64_t v = n->as_integer()->get();
    if (v < min || v > max)
        fail("{}: key '{}' = {} is out of range (allowed: {} to {})", *file_, dotted(key), v, min, max);
    return v;
}

bool TomlSection::get_bool(const std::string& key) {
    const toml::node* n = node(key);
    if (!n) fail("{}: missing key '{}' (true or false)", *file_, dotted(key));
    if (!n->is_boolean()) wrong_type(key, "boolean");
    return n->as_boolean()->get();
}

std::string TomlSection::get_string(const std::string& key) {
    const toml::node* n = node(key);
    if (!n) fail("{}: missing key '{}' (a string)", *file_, dotted(key));
    if (!n->is_string()) wrong_type(key, "string");
    return n->as_string()->get();
}

std::string TomlSection::get_enum(const std::string& key, const std::vector<std::string>& allowed) {
    const toml::node* n = node(key);
    if (!n) fail("{}: missing key '{}' (one of: {})", *file_, dotted(key), join(allowed));
    if (!n->is_string()) wrong_type(key, "string");
    std::string v = n->as_string()->get();
    for (const auto& a : allowed)
        if (a == v) return v;
    fail("{}: key '{}' = \"{}\" is not allowed (allowed: {})", *file_, dotted(key), v, join(allowed));
}

double TomlSection::get_double_or(const std::string& key, double fallback, double min, double max) {
    return has(key) ? get_double(key, min, max) : fallback;
}
int64_t TomlSection::get_int_or(const std::string& key, int64_t fallback, int64_t min, int64_t max) {
    return has(key) ? get_int(key, min, max) : fallback;
}
bool TomlSection::get_bool_or(const std::string& key, bool fallback) { return has(key) ? get_bool(key) : fallback; }
std::string TomlSection::get_string_or(const std::string& key, const std::string& fallback) {
    return has(key) ? get_string(key) : fallback;
}
std::string TomlSection::get_enum_or(const std::string& key, const std::string& fallback,
                                     const std::vector<std::string>& allowed) {
    return has(key) ? get_enum(key, allowed) : fallback;
}

TomlSection TomlSection::section(const std::string& key) {
    auto s = find_section(key);
    if (!s) fail("{}: missing section [{}]", *file_, dotted(key));
    return std::move(*s);
}

std::optional<TomlSection> TomlSection::find_section(const std::string& key) {
    const toml::node* n = node(key);
    if (!n) return std::nullopt;
    if (!n->is_table()) wrong_type(key, "table");
    return TomlSection(file_, dotted(key), n->as_table());
}

void TomlSection::finish() const {
    std::vector<std::string> known(used_.begin(), used_.end());
    for (const auto& [name, _] : *table_) {
        std::string k(name.str());
        if (!used_.count(k))
            fail("{}: unknown key '{}' (allowed here: {})", *file_, dotted(k), known.empty() ? "none" : join(known));
    }
}

TomlDoc TomlDoc::parse_string(const std::string& text, const std::string& name) {
    TomlDoc d;
    try {
        d.table_ = std::make_shared<toml::table>(toml::parse(text, name));
    } catch (const toml::parse_error& e) {
        fail("{}: TOML parse error at line {}, column {}: {}", name, e.source().begin.line, e.source().begin.column,
             e.description());
    }
    d.root_ = std::make_unique<TomlSection>(std::make_shared<const std::string>(name), "", d.table_.get());
    return d;
}

TomlDoc TomlDoc::parse_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("{}: cannot open file", path);
    std::stringstream ss;
    ss << in.rdbuf();
    return parse_string(ss.str(), path);
}

}  // namespace duet
