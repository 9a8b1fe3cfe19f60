#include "hw/calibration/reference_runs.h"

#include <toml++/toml.h>

#include <filesystem>

#include "core/error.h"
#include "hw/memory_presets.h"

namespace duet::hw::calibration {

double ReferenceRun::number(const std::string& key) const {
    const auto it = numbers.find(key);
    if (it == numbers.end()) fail("reference run [{}] has no number '{}'", name, key);
    return it->second;
}

const ReferenceRun* ReferenceFile::find(const std::string& run) const {
    for (const ReferenceRun& r : runs)
        if (r.name == run) return &r;
    return nullptr;
}

std::string ReferenceFile::cite() const {
    return fmt::format("{} @{} ({}, run {})", repo, commit.substr(0, 7), command.substr(0, command.find(':')), date);
}

std::optional<ReferenceFile> load_reference_file(const std::string& name, const std::string& dir) {
    const std::string path = (dir.empty() ? config_dir() : dir) + "/hw/references/" + name + ".toml";
    if (!std::filesystem::exists(path)) return std::nullopt;
    toml::table doc;
    try {
        doc = toml::parse_file(path);
    } catch (const toml::parse_error& e) {
        fail("{}: {} (line {})", path, std::string(e.description()), e.source().begin.line);
    }
    ReferenceFile f;
    f.path = path;
    const toml::table* src = doc["source"].as_table();
    if (!src) fail("{}: missing table [source] (repo, commit, command, machine, date)", path);
    for (auto [key, out] : {std::pair{"repo", &f.repo}, {"commit", &f.commit}, {"command", &f.command},
                            {"machine", &f.machine}, {"date", &f.date}}) {
        const auto v = (*src)[key].value<std::string>();
        if (!v || v->empty()) fail("{}: source.{} is missing or not a non-empty string", path, key);
        *out = *v;
    }
    for (const auto& [key, node] : doc) {
        if (key.str() == "source") continue;
        const toml::table* t = node.as_table();
        if (!t) fail("{}: '{}' is not a table (every run is a [table] of numbers and strings)", path, key.str());
        ReferenceRun r;
        r.name = std::string(key.str());
        for (const auto& [k, v] : *t) {
            if (const auto d = v.value<double>(); d && (v.is_integer() || v.is_floating_point()))
                r.numbers[std::string(k.str())] = *d;
            else if (const auto s = v.value<std::string>())
                r.strings[std::string(k.str())] = *s;
            else
                fail("{}: {}.{} is neither a number nor a string", path, r.name, k.str());
        }
        f.runs.push_back(std::move(r));
    }
    return f;
}

}  // namespace duet::hw::calibration
