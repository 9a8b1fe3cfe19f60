#include "hw/cpu/host_profile.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/toml_reader.h"

namespace duet::hw::cpu {
namespace {

LinearCost read_linear(TomlSection s) {
    LinearCost c;
    c.ns = s.get_double("ns", 0, 1e12);
    c.ns_per_byte = s.get_double("ns_per_byte", 0, 1e6);
    s.finish();
    return c;
}

// "m16" -> 16; anything else throws naming the key.
int64_t rows_of_key(const TomlSection& s, const std::string& key) {
    int64_t rows = 0;
    size_t used = 0;
    if (key.size() > 1 && key[0] == 'm') {
        try {
            rows = std::stoll(key.substr(1), &used);
        } catch (const std::exception&) {
            used = 0;
        }
    }
    if (used == 0 || used != key.size() - 1 || rows < 1)
        fail("{}: key '{}' is not allowed (allowed: m<rows>, e.g. m1, m16, with rows >= 1)", s.file(), s.dotted(key));
    return rows;
}

}  // namespace

HostProfile load_host_profile(const std::string& path) {
    TomlDoc doc = TomlDoc::parse_file(path);
    HostProfile p;
    p.path = path;
    TomlSection h = doc.section("host");
    p.cpu = h.get_string("cpu");
    p.threads = h.get_int("threads", 1, 4096);
    p.model = h.get_string("model");
    p.measured = h.get_string("measured");
    p.kv_block_tokens = h.get_int("kv_block_tokens", 1, 1 << 20);
    p.memory_gib = h.get_double("memory_gib", 0, 1 << 24);
    h.finish();
    TomlSection mm = doc.section("matmul");
    for (const std::string& name : mm.keys()) {
        const std::optional<DType> t = dtype_from_name(name);
        if (!t || !is_matmul_weight_dtype(*t))
            fail("{}: section [{}] is not a matmul weight dtype (allowed: {})", path, mm.dotted(name),
                 matmul_weight_dtype_names());
        TomlSection rates = mm.section(name);
        for (const std::string& key : rates.keys())
            p.matmul[*t][rows_of_key(rates, key)] = rates.get_double(key, 0, 1e6);
        if (p.matmul[*t].empty()) fail("{}: [{}] has no rates (allowed: m<rows> = ns per weight byte)", path, mm.dotted(name));
        rates.finish();
    }
    if (p.matmul.empty()) fail("{}: [matmul] has no dtype (allowed: [matmul.<dtype>] with m<rows> keys)", path);
    mm.finish();
    TomlSection a = doc.section("attention");
    p.attention_ns = a.get_double("ns", 0, 1e12);
    p.attention_ns_per_kv_byte = a.get_double("ns_per_kv_byte", 0, 1e6);
    p.attention_ns_per_flop = a.get_double("ns_per_flop", 0, 1e6);
    a.finish();
    p.elementwise = read_linear(doc.section("elementwise"));
    p.copy = read_linear(doc.section("copy"));
    TomlSection st = doc.section("step");
    p.step_ns = st.get_double("ns", 0, 1e12);
    p.step_ns_per_seq = st.get_double("ns_per_seq", 0, 1e12);
    st.finish();
    doc.finish();
    return p;
}

std::string host_profile_toml(const HostProfile& p) {
    auto q = [](const std::string& s) {  // a TOML basic string
        std::string out = "\"";
        for (char c : s) {
            if (c == '"' || c == '\\') out += '\\';
            if (c == '\n' || c == '\r') continue;
            out += c;
        }
        return out + "\"";
    };
    std::string t =
        "# A host-CPU profile written by `duet calibrate --host-profile FILE` (hw/cpu/host_profile.h says what each\n"
        "# value is).\n"
        "# `duet bench --workload serving --host-profile FILE` times the modelled steps with it.\n";
    t += fmt::format("[host]\ncpu = {}\nthreads = {}\nmodel = {}\nmeasured = {}\nkv_block_tokens = {}\nmemory_gib = {}\n",
                     q(p.cpu), p.threads, q(p.model), q(p.measured), p.kv_block_tokens, p.memory_gib);
    t += "\n[matmul]  # ns per weight byte at m rows\n";
    for (const auto& [dtype, rates] : p.matmul) {
        t += fmt::format("[matmul.{}]\n", dtype_name(dtype));
        for (const auto& [rows, ns] : rates) t += fmt::format("m{} = {}\n", rows, ns);
    }
    t += fmt::format("\n[attention]\nns = {}\nns_per_kv_byte = {}\nns_per_flop = {}\n", p.attention_ns,
                     p.attention_ns_per_kv_byte, p.attention_ns_per_flop);
    t += fmt::format("\n[elementwise]\nns = {}\nns_per_byte = {}\n", p.elementwise.ns, p.elementwise.ns_per_byte);
    t += fmt::format("\n[copy]\nns = {}\nns_per_byte = {}\n", p.copy.ns, p.copy.ns_per_byte);
    t += fmt::format("\n[step]\nns = {}\nns_per_seq = {}\n", p.step_ns, p.step_ns_per_seq);
    return t;
}

double matmul_ns_per_weight_byte(const HostProfile& p, DType dtype, int64_t rows) {
    const auto it = p.matmul.find(dtype);
    if (it == p.matmul.end() || it->second.empty()) {
        std::string have;
        for (const auto& [d, r] : p.matmul) have += (have.empty() ? "" : ", ") + std::string(dtype_name(d));
        fail("host profile {}: no matmul rates for weight dtype {} (measured: {}; run `duet calibrate --host-profile "
             "FILE` on a model of that dtype)", p.path.empty() ? "(in memory)" : p.path, dtype_name(dtype), have);
    }
    const std::map<int64_t, double>& r = it->second;
    if (rows <= r.begin()->first) return r.begin()->second;
    const auto hi = r.lower_bound(rows);
    if (hi == r.end()) {  // beyond the largest measured: compute bound, time grows with the rows
        const auto last = std::prev(r.end());
        return last->second * double(rows) / double(last->first);
    }
    if (hi->first == rows) return hi->second;
    const auto lo = std::prev(hi);
    const double f = double(rows - lo->first) / double(hi->first - lo->first);
    return lo->second + f * (hi->second - lo->second);
}

}  // namespace duet::hw::cpu
