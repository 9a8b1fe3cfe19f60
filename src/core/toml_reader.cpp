#include "core/toml_reader.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/file_read.h"

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

// Before toml++ sees the text: a key or table header of more than kMaxKeyParts dotted parts,
// or inline tables / arrays nested deeper than kMaxNesting, is refused. Each part or level is
// one nested table that toml++ builds and destroys recursively; a 60 KB line of "a.a.a..."
// overflowed the stack. The scan is linear and follows TOML's strings and comments, so dots
// and brackets inside them do not count.
constexpr size_t kMaxKeyParts = 64;
constexpr size_t kMaxNesting = 64;

// Index just past the string starting at text[i] (a quote), or text.size() when unterminated.
size_t skip_string(const std::string& text, size_t i, size_t& line) {
    const char q = text[i];
    const bool multi = text.compare(i, 3, std::string(3, q)) == 0;
    const std::string close = multi ? std::string(3, q) : std::string(1, q);
    for (size_t j = i + close.size(); j < text.size(); ++j) {
        if (text[j] == '\n') ++line;
        if (q == '"' && text[j] == '\\') {
            ++j;
            continue;
        }
        if (text.compare(j, close.size(), close) == 0) {
            if (multi)  // up to two more quotes may belong to the string
                while (j + 3 < text.size() && text[j + 3] == q) ++j;
            return j + close.size();
        }
        if (!multi && text[j] == '\n') return j;
    }
    return text.size();
}

void check_toml_budget(const std::string& text, const std::string& name) {
    std::vector<char> open;  // '{' or '[' of inline tables and arrays
    bool key_pos = true, header = false;
    size_t parts = 1, line = 1;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '"' || c == '\'') {
            i = skip_string(text, i, line) - 1;
            continue;
        }
        switch (c) {
            case '#':
                while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
                break;
            case '\n':
                ++line;
                if (open.empty()) key_pos = true, header = false, parts = 1;
                break;
            case '=':
                if (key_pos && !header) key_pos = false;
                break;
            case '.':
                if ((key_pos || header) && ++parts > kMaxKeyParts)
                    fail("{}: line {}: a key has more than {} dotted parts (allowed: at most {})", name, line,
                         kMaxKeyParts, kMaxKeyParts);
                break;
            case '[':
                if (key_pos && open.empty()) {  // a table header
                    header = true;
                    parts = 1;
                    if (i + 1 < text.size() && text[i + 1] == '[') ++i;
                    break;
                }
                [[fallthrough]];
            case '{':
                open.push_back(c);
                if (open.size() > kMaxNesting)
                    fail("{}: line {}: inline tables and arrays are nested deeper than {} levels (allowed: at most {})",
                         name, line, kMaxNesting, kMaxNesting);
                if (c == '{') key_pos = true, parts = 1;
                break;
            case ']':
                if (header && open.empty()) {
                    header = false, key_pos = false;
                    if (i + 1 < text.size() && text[i + 1] == ']') ++i;
                } else if (!open.empty()) {
                    open.pop_back();
                }
                break;
            case '}':
                if (!open.empty()) open.pop_back();
                key_pos = false;
                break;
            case ',':
                if (!open.empty() && open.back() == '{') key_pos = true, parts = 1;
                break;
            default: break;
        }
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
    check_toml_budget(text, name);
    try {
        d.table_ = std::make_shared<toml::table>(toml::parse(text, name));
    } catch (const toml::parse_error& e) {
        fail("{}: TOML parse error at line {}, column {}: {}", name, e.source().begin.line, e.source().begin.column,
             e.description());
    }
    d.root_ = std::make_unique<TomlSection>(std::make_shared<const std::string>(name), "", d.table_.get());
    return d;
}

TomlDoc TomlDoc::parse_file(const std::string& path) { return parse_string(read_small_file(path, ""), path); }

}  // namespace duet
