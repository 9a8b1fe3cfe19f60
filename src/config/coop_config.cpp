#include "config/coop_config.h"

#include <algorithm>
#include <cctype>
#include <utility>
#include <charconv>

#include "config/loader.h"

namespace duet::config {
namespace {

using F = Field<CoopConfig>;

template <class S, class M>
F make(std::string sec, std::string key, FieldKind kind, S CoopConfig::*section, M S::*member) {
    const std::string env = sec + "_" + key;  // config.toml keys: DUET_<SECTION>_<KEY>
    return member_field(std::move(sec), std::move(key), kind, section, member, env);
}

// An ENUM key stored as a typed enum: the spelling is compared once, here, when the value is set.
template <class S, class E>
F enum_field(std::string sec, std::string key, S CoopConfig::*section, E S::*member,
             std::vector<std::pair<std::string, E>> values) {
    F f;
    f.section = std::move(sec);
    f.key = std::move(key);
    f.kind = FieldKind::ENUM;
    f.env = "DUET_" + f.section + "_" + f.key;
    for (auto& c : f.env) c = char(std::toupper(static_cast<unsigned char>(c)));
    for (const auto& v : values) f.allowed.push_back(v.first);
    f.set = [section, member, values](CoopConfig& c, const Value& v) {
        for (const auto& [name, e] : values)
            if (name == v.s) (c.*section).*member = e;
    };
    f.show = [section, member, values](const CoopConfig& c) {
        for (const auto& [name, e] : values)
            if (e == (c.*section).*member) return "\"" + name + "\"";
        return std::string("\"?\"");
    };
    return f;
}

std::string power_of_two(const Value& v) {
    return (v.i > 0 && (v.i & (v.i - 1)) == 0) ? std::string() : std::string("a power of two");
}

std::vector<F> build() {
    using K = FieldKind;
    using C = CoopConfig;
    std::vector<F> v;
    v.push_back(enum_field("pim", "layout", &C::pim, &PimSection::layout,
                           {{"row_major_128bit", PimLayout::ROW_MAJOR_128BIT}, {"row_major_256bit", PimLayout::ROW_MAJOR_256BIT}}));
    F align = ranged(make("pim", "alignment", K::INT, &C::pim, &PimSection::alignment_bits), 128, 256);
    align.check = [](const Value& x) { return x.i == 128 || x.i == 256 ? std::string() : std::string("128 or 256 (bits)"); };
    v.push_back(align);
    v.push_back(enum_field("pim", "compute_unit", &C::pim, &PimSection::compute_unit,
                           {{"gemv", ComputeUnit::GEMV}, {"gemv_attention", ComputeUnit::GEMV_ATTENTION}}));
    v.push_back(dtype_enum(enum_field("pim", "precision", &C::pim, &PimSection::precision,
                                      {{"f16", PimPrecision::FP16}, {"bf16", PimPrecision::BF16},
                                       {"i8", PimPrecision::INT8}, {"auto", PimPrecision::AUTO}}),
                           {"f16", "bf16", "i8", "auto"}));
    F block = ranged(make("reorder", "block_size_kb", K::INT, &C::reorder, &ReorderSection::block_size_kb), 1, 4096);
    block.check = power_of_two;
    v.push_back(block);
    v.push_back(enum_field("reorder", "target_format", &C::reorder, &ReorderSection::target_format,
                           {{"NZ", TargetFormat::NZ}, {"ND", TargetFormat::ND}}));
    v.push_back(ranged(make("reorder", "index_ratio_limit", K::DOUBLE, &C::reorder, &ReorderSection::index_ratio_limit), 0.0001, 1));
    v.push_back(ranged(make("reorder", "prefetch_depth", K::INT, &C::reorder, &ReorderSection::prefetch_depth), 0, 64));
    v.push_back(enum_field("scheduling", "prefill_engine", &C::scheduling, &SchedulingSection::prefill_engine,
                           {{"npu_gemm", PrefillEngine::NPU_GEMM}, {"pim_gemv", PrefillEngine::PIM_GEMV}}));
    v.push_back(enum_field("scheduling", "decode_engine", &C::scheduling, &SchedulingSection::decode_engine,
                           {{"pim_gemv", DecodeEngine::PIM_GEMV}, {"npu_gemv", DecodeEngine::NPU_GEMV}}));
    v.push_back(make("scheduling", "zero_copy_switch", K::BOOL, &C::scheduling, &SchedulingSection::zero_copy_switch));
    v.push_back(make("scheduling", "preconvert_first_token", K::BOOL, &C::scheduling, &SchedulingSection::preconvert_first_token));
    F layers = make("scheduling", "npu_only_layers", K::STRING, &C::scheduling, &SchedulingSection::npu_only_layers);
    layers.check = [](const Value& x) {
        try {
            parse_layer_list(x.s, "");
            return std::string();
        } catch (const Error&) {
            return std::string("a list of layers and ranges like \"0-1,31\" or \"\", layers 0 to 4095");
        }
    };
    v.push_back(layers);
    v.push_back(make("memory", "weight_base_shared", K::BOOL, &C::memory, &MemorySection::weight_base_shared));
    v.push_back(ranged(make("memory", "index_granularity", K::INT, &C::memory, &MemorySection::index_granularity), 1, 65536));
    v.push_back(ranged(make("memory", "cache_limit_mb", K::INT, &C::memory, &MemorySection::cache_limit_mb), 1, 1048576));
    v.push_back(ranged(make("topology", "npus", K::INT, &C::topology, &TopologySection::npus), 1, 64));
    v.push_back(ranged(make("topology", "pims", K::INT, &C::topology, &TopologySection::pims), 0, 64));
    v.push_back(one_of(make("topology", "npu_link", K::ENUM, &C::topology, &TopologySection::npu_link), link_preset_names()));
    v.push_back(one_of(make("topology", "pim_link", K::ENUM, &C::topology, &TopologySection::pim_link), link_preset_names()));
    F presets = make("topology", "pim_presets", K::STRING, &C::topology, &TopologySection::pim_presets);
    presets.check = [](const Value& x) {
        for (const std::string& n : split_names(x.s))
            if (n.empty()) return std::string("PIM preset names separated by commas, or \"\"");
        return std::string();
    };
    v.push_back(presets);
    v.push_back(ranged(make("topology", "ep", K::INT, &C::topology, &TopologySection::ep), 1, 1024));
    v.push_back(enum_field("topology", "tp_split", &C::topology, &TopologySection::tp_split,
                           {{"megatron", TpSplitMode::MEGATRON}, {"cent", TpSplitMode::CENT}}));
    return v;
}

}  // namespace

const std::vector<Field<CoopConfig>>& coop_config_fields() {
    static const std::vector<Field<CoopConfig>> fields = build();
    return fields;
}

CoopConfig load_coop_config(const std::string& path, const EnvMap& env, Diagnostics& diag) {
    CoopConfig c;
    const auto& fields = coop_config_fields();
    if (!path.empty()) {
        try {
            TomlDoc doc = TomlDoc::parse_file(path);
            apply_toml(doc, fields, c, diag);
        } catch (const Error& e) {  // unreadable file or TOML syntax
            diag.error(e.what());
        }
    }
    apply_env(env, fields, c, diag);
    // A combination an override made is blamed on the variable(s), not on the file.
    std::string where;
    for (const char* var : {"DUET_PIM_LAYOUT", "DUET_PIM_ALIGNMENT"})
        if (env.count(var)) where += (where.empty() ? "environment variable " : " + ") + std::string(var);
    if (where.empty()) where = path.empty() ? std::string("built-in config") : path;
    check_coop_config(c, where, diag);
    return c;
}

void check_coop_config(const CoopConfig& c, const std::string& where, Diagnostics& diag) {
    const int64_t layout_bits = c.pim.layout == PimLayout::ROW_MAJOR_256BIT ? 256 : 128;
    if (layout_bits != c.pim.alignment_bits)
        diag.error(fmt::format("{}: key 'pim.layout' = \"{}\" needs pim.alignment = {} (found {})", where,
                               fmt::format("row_major_{}bit", layout_bits), layout_bits, c.pim.alignment_bits));
}

CoopConfig load_coop_config(const std::string& path, const EnvMap& env) {
    Diagnostics d;
    return load_coop_config(path, env, d);
}

void check_pim_presets(const TopologySection& t) {
    const size_t named = split_names(t.pim_presets).size();
    if (named > 0 && int64_t(named) != t.pims)
        fail("topology.pim_presets = \"{}\" names {} presets for topology.pims = {} (allowed: one per PIM device, or \"\")",
             t.pim_presets, named, t.pims);
}

const char* pim_precision_name(PimPrecision p) {
    return p == PimPrecision::BF16 ? "bf16" : p == PimPrecision::INT8 ? "i8" : p == PimPrecision::AUTO ? "auto" : "f16";
}

const std::vector<std::string>& link_preset_names() {
    static const std::vector<std::string> names = {"shared_hbm", "hccs_910b", "pcie4_x16", "pcie5_x16",
                                                         "cxl2_x16",   "roce_200g", "roce_400g", "cxl_cent_x18",
                                                         "cxl_cent_x7", "cxl_cent_x4"};
    return names;
}

std::vector<std::string> split_names(const std::string& text) {
    std::vector<std::string> out;
    if (text.empty()) return out;
    size_t pos = 0;
    while (true) {
        const size_t end = text.find(',', pos);
        out.push_back(text.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
        if (end == std::string::npos) break;
        pos = end + 1;
    }
    return out;
}

TopologySection load_topology_file(const std::string& path, const TopologySection& base) {
    std::vector<F> fields;
    for (const F& f : coop_config_fields())
        if (f.section == "topology") fields.push_back(f);
    CoopConfig c;
    c.topology = base;
    Diagnostics diag;
    try {
        TomlDoc doc = TomlDoc::parse_file(path);
        apply_toml(doc, fields, c, diag);
    } catch (const Error& e) {
        diag.error(e.what());
    }
    if (!diag.errors().empty()) fail("{}", diag.errors().front());
    return c.topology;
}

std::vector<int> parse_layer_list(const std::string& text, const std::string& where, int64_t n_layer,
                                  const std::string& model) {
    std::vector<int> out;
    size_t pos = 0;
    auto bad = [&]() { fail("{}: layer list \"{}\" is not valid (allowed: layers and ranges like \"0-1,31\")", where, text); };
    while (pos < text.size()) {
        size_t end = text.find(',', pos);
        if (end == std::string::npos) end = text.size();
        std::string item = text.substr(pos, end - pos);
        size_t dash = item.find('-');
        int a = 0, b = 0;
        auto num = [&](const std::string& s, int& x) {
            auto r = std::from_chars(s.data(), s.data() + s.size(), x);
            if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size() || x < 0) bad();
        };
        if (dash == std::string::npos) {
            num(item, a);
            b = a;
        } else {
            num(item.substr(0, dash), a);
            num(item.substr(dash + 1), b);
        }
        if (b < a) bad();
        // Checked before the range is expanded: "0-2000000000" allocated until bad_alloc.
        if (!model.empty() && b >= n_layer)
            fail("{} = \"{}\": layer {} is past {}'s {} layers (allowed: layers 0 to {})", where,
                 text.size() > 64 ? text.substr(0, 64) + "..." : text, std::max<int64_t>(a, n_layer), model, n_layer,
                 n_layer - 1);
        if (b > kMaxLayerIndex)
            fail("{}: layer {} in \"{}\" is out of range (allowed: layers 0 to {})",
                 where, b, text.size() > 64 ? text.substr(0, 64) + "..." : text, kMaxLayerIndex);
        for (int l = a; l <= b; ++l) out.push_back(l);
        pos = end + 1;
        if (end == text.size() - 1) bad();  // trailing comma
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

}  // namespace duet::config
