#pragma once
// Strict reading of TOML files (presets, config.toml). Every getter names the file and the
// dotted key in its error, with the value and what is allowed; finish() rejects keys that no
// getter asked for, so a typo in a config never passes silently.
//
//   auto doc = TomlDoc::parse_file("configs/hw/lpddr5.toml");
//   auto t = doc.section("timing");              // throws if missing
//   double tck = t.get_double("tCK_ns", 0.1, 10);
//   t.finish(); doc.finish();
#include <toml++/toml.h>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace duet {

class TomlSection {
public:
    TomlSection(std::shared_ptr<const std::string> file, std::string prefix, const toml::table* table);

    bool has(const std::string& key) const;
    const std::string& file() const { return *file_; }
    std::string dotted(const std::string& key) const;  // "timing.tCK_ns"
    std::vector<std::string> keys() const;             // in file order

    // Required values; throw duet::Error when missing, of another type or out of [min, max].
    double get_double(const std::string& key, double min, double max);
    int64_t get_int(const std::string& key, int64_t min, int64_t max);
    bool get_bool(const std::string& key);
    std::string get_string(const std::string& key);
    // A string that must be one of `allowed`.
    std::string get_enum(const std::string& key, const std::vector<std::string>& allowed);

    // Optional forms: return `fallback` when the key is absent, validate when present.
    double get_double_or(const std::string& key, double fallback, double min, double max);
    int64_t get_int_or(const std::string& key, int64_t fallback, int64_t min, int64_t max);
    bool get_bool_or(const std::string& key, bool fallback);
    std::string get_string_or(const std::string& key, const std::string& fallback);
    std::string get_enum_or(const std::string& key, const std::string& fallback,
                            const std::vector<std::string>& allowed);

    TomlSection section(const std::string& key);  // required sub-table
    std::optional<TomlSection> find_section(const std::string& key);

    // Throws for the first key present in the table that no getter or section() consumed.
    void finish() const;

private:
    const toml::node* node(const std::string& key);
    [[noreturn]] void wrong_type(const std::string& key, const char* expected) const;

    std::shared_ptr<const std::string> file_;
    std::string prefix_;
    const toml::table* table_;
    std::set<std::string> used_;
};

class TomlDoc {
public:
    static TomlDoc parse_file(const std::string& path);                       // throws duet::Error
    static TomlDoc parse_string(const std::string& text, const std::string& name);  // name used in errors
    TomlSection& root() { return *root_; }
    TomlSection section(const std::string& key) { return root_->section(key); }
    std::optional<TomlSection> find_section(const std::string& key) { return root_->find_section(key); }
    void finish() const { root_->finish(); }

private:
    std::shared_ptr<toml::table> table_;
    std::unique_ptr<TomlSection> root_;
};

}  // namespace duet
