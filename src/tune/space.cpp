#include "tune/space.h"

#include <fmt/format.h>

#include <algorithm>

#include "config/json_value.h"
#include "config/loader.h"
#include "core/error.h"
#include "hw/memory_presets.h"
#include "hw/npu/npu_preset.h"
#include "workload/modelled_machine.h"

namespace duet::tune {
namespace {

// The values tried per knob. Each covers the knob's allowed range at the steps where the
// model changes behaviour (powers of two for sizes, every enum value, both booleans).
std::vector<Dimension> default_dims(int64_t n_layer) {
    const std::string last = std::to_string(std::max<int64_t>(0, n_layer - 1));
    return {
        {"pim.alignment", {"128", "256"}},  // pim.layout follows (the loader requires the pair)
        {"pim.compute_unit", {"\"gemv\"", "\"gemv_attention\""}},
        {"reorder.block_size_kb", {"4", "8", "16", "32", "64", "128"}},
        {"reorder.target_format", {"\"NZ\"", "\"ND\""}},
        {"reorder.prefetch_depth", {"0", "1", "2", "4", "8", "16"}},
        {"scheduling.prefill_engine", {"\"npu_gemm\"", "\"pim_gemv\""}},
        {"scheduling.decode_engine", {"\"pim_gemv\"", "\"npu_gemv\""}},
        {"scheduling.zero_copy_switch", {"true", "false"}},
        {"scheduling.preconvert_first_token", {"true", "false"}},
        {"scheduling.npu_only_layers", {"\"\"", "\"0\"", "\"" + last + "\"", "\"0," + last + "\"", "\"0-1\""}},
        {"memory.weight_base_shared", {"true", "false"}},
        {"memory.index_granularity", {"16", "32", "64", "128", "256"}},
        {"memory.cache_limit_mb", {"128", "256", "512", "1024"}},
        {"npu.dispatch", {"\"queue1\"", "\"eager\"", "\"queue0\"", "\"queue2\"", "\"graph\""}},
        {"runtime.batch_size", {"1", "2", "4", "8"}},
    };
}

std::vector<std::string> hw_pair_values() {
    std::vector<std::string> out;
    for (const auto& name : hw::npu::known_soc_versions()) {
        if (name.find(' ') != std::string::npos) continue;  // "Ascend910B (alias of ...)": same chip twice
        for (const auto& pim : hw::pim_preset_names()) out.push_back("\"" + name + "+" + pim + "\"");
    }
    return out;
}

bool is_special(const std::string& name) { return name == "npu.dispatch" || name == "hw.pair"; }

bool known_key(const std::string& name) {
    if (is_special(name)) return true;
    for (const auto& f : config::settings_fields())
        if (f.dotted() == name) return true;
    for (const auto& f : config::coop_config_fields())
        if (f.dotted() == name) return true;
    return false;
}

std::string unquote(const std::string& lit) {
    nlohmann::json j = nlohmann::json::parse(lit, nullptr, false);
    return j.is_string() ? j.get<std::string>() : lit;
}

template <class T>
bool set_from(const std::vector<config::Field<T>>& fields, T& target, const std::string& dotted,
              const nlohmann::json& v, const std::string& where) {
    for (const auto& f : fields) {
        if (f.dotted() != dotted) continue;
        config::Value val;
        const bool ok = config::value_from_json(f.kind, v, val);
        if (!ok)
            fail("{}: key '{}' = {} has the wrong type (allowed: {})", where, dotted, v.dump(),
                 config::describe_allowed(f.kind, f.min, f.max, f.allowed));
        const std::string err = config::validate_value(f, val, where);
        if (!err.empty()) throw Error(err);
        f.set(target, val);
        return true;
    }
    return false;
}

}  // namespace

void set_knob(Candidate& c, const std::string& dotted, const std::string& json_literal, const std::string& where) {
    nlohmann::json v = nlohmann::json::parse(json_literal, nullptr, false);
    if (v.is_discarded()) v = json_literal;  // a bare word is a string
    if (dotted == "npu.dispatch") {
        if (!v.is_string()) fail("{}: key 'npu.dispatch' = {} must be a string", where, v.dump());
        c.in.dispatch = v.get<std::string>();
        return;
    }
    if (dotted == "hw.pair") {
        const std::string s = v.is_string() ? v.get<std::string>() : v.dump();
        const size_t plus = s.find('+');
        if (plus == std::string::npos)
            fail("{}: key 'hw.pair' = \"{}\" is not SOC+PIM_PRESET (e.g. Ascend910B+pim_hbm2_fimdram)", where, s);
        set_knob(c, "ascend.soc_version", fmt::format("\"{}\"", s.substr(0, plus)), where);
        c.in.pim = s.substr(plus + 1);
        return;
    }
    if (set_from(config::settings_fields(), c.st, dotted, v, where)) {
        if (dotted == "ascend.soc_version") {
            const auto socs = workload::known_soc_names();
            if (std::find(socs.begin(), socs.end(), c.st.ascend.soc_version) == socs.end())
                fail("{}: key 'ascend.soc_version' = \"{}\" is not a known NPU preset (allowed: {})", where,
                     c.st.ascend.soc_version, config::join_names(socs));
        }
        if (dotted == "runtime.seq_len") c.in.seq_len = c.st.runtime.seq_len;
        if (dotted == "runtime.batch_size") c.in.batch = int32_t(c.st.runtime.batch_size);
        return;
    }
    if (set_from(config::coop_config_fields(), c.cfg, dotted, v, where)) return;
    fail("{}: unknown key '{}' (allowed: a settings.json or config.toml key by its dotted name, npu.dispatch, hw.pair)",
         where, dotted);
}

Space::Space(const SpaceOptions& opt, int64_t n_layer) : fixed_(opt.fixed) {
    for (const auto& [k, _] : opt.fixed)
        if (!known_key(k)) fail("--fix: unknown key '{}'", k);
    for (const auto& [k, _] : opt.values)
        if (!known_key(k)) fail("--vary: unknown key '{}'", k);
    for (const auto& k : opt.only)
        if (!known_key(k)) fail("--only: unknown key '{}'", k);
    std::vector<Dimension> all = default_dims(n_layer);
    if (opt.hw_pairs) all.push_back({"hw.pair", hw_pair_values()});
    for (const auto& [k, vals] : opt.values) {
        auto it = std::find_if(all.begin(), all.end(), [&](const Dimension& d) { return d.name == k; });
        if (it != all.end()) it->values = vals;
        else all.push_back({k, vals});
    }
    for (auto& d : all) {
        if (fixed_.count(d.name)) continue;
        if (d.name == "pim.alignment" && fixed_.count("pim.layout")) continue;  // alignment follows the fixed layout
        if (d.name == "hw.pair" && fixed_.count("ascend.soc_version")) continue;
        if (!opt.only.empty() && std::find(opt.only.begin(), opt.only.end(), d.name) == opt.only.end()) continue;
        if (d.values.empty()) fail("--vary {}: no values", d.name);
        dims_.push_back(std::move(d));
    }
}

double Space::size() const {
    double n = 1;
    for (const auto& d : dims_) n *= double(d.values.size());
    return n;
}

Point Space::base_point(const Candidate& base) const {
    Point p(dims_.size(), 0);
    for (size_t i = 0; i < dims_.size(); ++i)
        for (size_t v = 0; v < dims_[i].values.size(); ++v) {
            Candidate c = base;
            try {
                set_knob(c, dims_[i].name, dims_[i].values[v], "tune");
            } catch (const Error&) {
                continue;
            }
            // equal when applying the value changes nothing
            bool same = c.in.dispatch == base.in.dispatch && c.in.pim == base.in.pim && c.in.batch == base.in.batch;
            for (const auto& f : config::settings_fields()) same = same && f.show(c.st) == f.show(base.st);
            for (const auto& f : config::coop_config_fields()) same = same && f.show(c.cfg) == f.show(base.cfg);
            if (dims_[i].name == "npu.dispatch" && base.in.dispatch.empty()) same = unquote(dims_[i].values[v]) == "queue1";
            if (same) {
                p[i] = int(v);
                break;
            }
        }
    return p;
}

Candidate Space::apply(const Candidate& base, const Point& p, const std::string& where) const {
    Candidate c = base;
    for (size_t i = 0; i < dims_.size(); ++i) set_knob(c, dims_[i].name, dims_[i].values[size_t(p[i])], where);
    for (const auto& [k, v] : fixed_) set_knob(c, k, v, where);
    if (!fixed_.count("pim.layout")) c.cfg.pim.layout = c.cfg.pim.alignment_bits == 256 ? config::PimLayout::ROW_MAJOR_256BIT
                                                                              : config::PimLayout::ROW_MAJOR_128BIT;
    else if (!fixed_.count("pim.alignment")) c.cfg.pim.alignment_bits = c.cfg.pim.layout == config::PimLayout::ROW_MAJOR_256BIT ? 256 : 128;
    // An explicit fp16/bf16 follows the swept runtime dtype; "auto" (and int8) stays as configured,
    // so the bench resolves "auto" per PIM preset (workload::choose_pim_precision: bf16 for a
    // bf16-only PIM such as the AiM of a hw.pair row).
    const bool float_precision =
        c.cfg.pim.precision == config::PimPrecision::FP16 || c.cfg.pim.precision == config::PimPrecision::BF16;
    if (!fixed_.count("pim.precision") && float_precision)
        c.cfg.pim.precision = c.st.runtime.dtype == "bf16" ? config::PimPrecision::BF16 : config::PimPrecision::FP16;
    config::Diagnostics diag;  // throws: the loader's message
    config::check_coop_config(c.cfg, where, diag);
    return c;
}

std::string Space::key(const Point& p) const {
    std::string k;
    for (size_t i = 0; i < dims_.size(); ++i) k += (i ? " " : "") + dims_[i].name + "=" + dims_[i].values[size_t(p[i])];
    return k;
}

nlohmann::json Space::values_json(const Point& p) const {
    nlohmann::json j = nlohmann::json::object();
    for (size_t i = 0; i < dims_.size(); ++i) j[dims_[i].name] = nlohmann::json::parse(dims_[i].values[size_t(p[i])]);
    return j;
}

bool Space::point_from_json(const nlohmann::json& values, Point& out) const {
    out.assign(dims_.size(), 0);
    if (!values.is_object() || values.size() != dims_.size()) return false;
    for (size_t i = 0; i < dims_.size(); ++i) {
        auto it = values.find(dims_[i].name);
        if (it == values.end()) return false;
        bool found = false;
        for (size_t v = 0; v < dims_[i].values.size() && !found; ++v)
            if (nlohmann::json::parse(dims_[i].values[v]) == *it) out[i] = int(v), found = true;
        if (!found) return false;
    }
    return true;
}

}  // namespace duet::tune
