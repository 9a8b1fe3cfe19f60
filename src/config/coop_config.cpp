#include "config/coop_config.h"

#include <algorithm>
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

std::string power_of_two(const Value& v) {
    return (v.i > 0 && (v.i & (v.i - 1)) == 0) ? std::string() : std::string("a power of two");
}

std::vector<F> build() {
    using K = FieldKind;
    using C = CoopConfig;
    std::vector<F> v;
    v.push_back(one_of(make("pim", "layout", K::ENUM, &C::pim, &PimSection::layout), {"row_major_128bit", "row_major_256bit"}));
    F align = ranged(make("pim", "alignment", K::INT, &C::pim, &PimSection::alignment_bits), 128, 256);
    align.check = [](const Value& x) { return x.i == 128 || x.i == 256 ? std::string() : std::string("128 or 256 (bits)"); };
    v.push_back(align);
    v.push_back(one_of(make("pim", "compute_unit", K::ENUM, &C::pim, &PimSection::compute_unit), {"gemv", "gemv_attention"}));
    v.push_back(one_of(make("pim", "precision", K::ENUM, &C::pim, &PimSection::precision), {"fp16", "bf16"}));
    F block = ranged(make("reorder", "block_size_kb", K::INT, &C::reorder, &ReorderSection::block_size_kb), 1, 4096);
    block.check = power_of_two;
    v.push_back(block);
    v.push_back(one_of(make("reorder", "target_format", K::ENUM, &C::reorder, &ReorderSection::target_format), {"NZ", "ND"}));
    v.push_back(ranged(make("reorder", "index_ratio_limit", K::DOUBLE, &C::reorder, &ReorderSection::index_ratio_limit), 0.0001, 1));
    v.push_back(ranged(make("reorder", "prefetch_depth", K::INT, &C::reorder, &ReorderSection::prefetch_depth), 0, 64));
    v.push_back(one_of(make("scheduling", "prefill_engine", K::ENUM, &C::scheduling, &SchedulingSection::prefill_engine),
                       {"npu_gemm", "pim_gemv"}));
    v.push_back(one_of(make("scheduling", "decode_engine", K::ENUM, &C::scheduling, &SchedulingSection::decode_engine),
                       {"pim_gemv", "npu_gemv"}));
    v.push_back(make("scheduling", "zero_copy_switch", K::BOOL, &C::scheduling, &SchedulingSection::zero_copy_switch));
    v.push_back(make("scheduling", "preconvert_first_token", K::BOOL, &C::scheduling, &SchedulingSection::preconvert_first_token));
    F layers = make("scheduling", "npu_only_layers", K::STRING, &C::scheduling, &SchedulingSection::npu_only_layers);
    layers.check = [](const Value& x) {
        try {
            parse_layer_list(x.s, "");
            return std::string();
        } catch (const Error&) {
            return std::string("a list of layers and ranges like \"0-1,31\" or \"\"");
        }
    };
    v.push_back(layers);
    v.push_back(make("memory", "weight_base_shared", K::BOOL, &C::memory, &MemorySection::weight_base_shared));
    v.push_back(ranged(make("memory", "index_granularity", K::INT, &C::memory, &MemorySection::index_granularity), 1, 65536));
    v.push_back(ranged(make("memory", "cache_limit_mb", K::INT, &C::memory, &MemorySection::cache_limit_mb), 1, 1048576));
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
    const int64_t layout_bits = c.pim.layout == "row_major_256bit" ? 256 : 128;
    if (layout_bits != c.pim.alignment_bits)
        diag.error(fmt::format("{}: key 'pim.layout' = \"{}\" needs pim.alignment = {} (found {})", where,
                               c.pim.layout, layout_bits, c.pim.alignment_bits));
}

CoopConfig load_coop_config(const std::string& path, const EnvMap& env) {
    Diagnostics d;
    return load_coop_config(path, env, d);
}

std::vector<int> parse_layer_list(const std::string& text, const std::string& where) {
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
        for (int l = a; l <= b; ++l) out.push_back(l);
        pos = end + 1;
        if (end == text.size() - 1) bad();  // trailing comma
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

}  // namespace duet::config
