#include "hw/npu/npu_preset.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "core/toml_reader.h"
#include "hw/memory_presets.h"

namespace duet::hw::npu {
namespace fs = std::filesystem;

namespace {

CubeFractal read_fractal(TomlSection& s, const std::string& prefix) {
    CubeFractal f;
    f.m0 = int(s.get_int(prefix + "_m", 1, 256));
    f.k0 = int(s.get_int(prefix + "_k", 1, 256));
    f.n0 = int(s.get_int(prefix + "_n", 1, 256));
    return f;
}

std::vector<fs::path> preset_files(const std::string& dir) {
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        if (e.is_regular_file() && name.rfind("ascend", 0) == 0 && e.path().extension() == ".toml")
            files.push_back(e.path());
    }
    if (ec) fail("NPU presets: cannot read directory '{}': {}", dir, ec.message());
    std::sort(files.begin(), files.end());
    return files;
}

}  // namespace

double NpuPreset::peak_cube_flops(bool int8) const {
    const CubeFractal& f = int8 ? fractal_int8 : fractal_fp16;
    return double(cube_cores) * f.macs_per_cycle() * 2.0 * cube_clock_mhz * 1e6;
}

std::string default_preset_dir() { return config_dir() + "/hw"; }

NpuPreset load_npu_preset_file(const std::string& path) {
    TomlDoc doc = TomlDoc::parse_file(path);
    NpuPreset p;
    p.file = path;
    {
        TomlSection s = doc.section("soc");
        p.soc_version = s.get_string("soc_version");
        p.short_soc_version = s.get_string("short_soc_version");
        p.alias = s.get_string_or("alias", "");
        p.description = s.get_string("description");
        p.cube_cores = int(s.get_int("cube_cores", 1, 1024));
        p.vector_cores = int(s.get_int("vector_cores", 1, 1024));
        p.cube_vector_fused = s.get_bool("cube_vector_fused");
        p.cube_clock_mhz = s.get_double("cube_clock_mhz", 1, 10000);
        p.vector_clock_mhz = s.get_double("vector_clock_mhz", 1, 10000);
        p.supports_bf16 = s.get_bool("supports_bf16");
        s.finish();
    }
    {
        TomlSection s = doc.section("cube");
        p.fractal_fp16 = read_fractal(s, "fp16");
        p.fractal_int8 = read_fractal(s, "int8");
        s.finish();
    }
    {
        TomlSection s = doc.section("buffers");
        p.l0a_kib = s.get_double("l0a_kib", 1, 1 << 20);
        p.l0b_kib = s.get_double("l0b_kib", 1, 1 << 20);
        p.l0c_kib = s.get_double("l0c_kib", 1, 1 << 20);
        p.l1_kib = s.get_double("l1_kib", 1, 1 << 20);
        p.ub_kib = s.get_double("ub_kib", 1, 1 << 20);
        p.l2_mib = s.get_double("l2_mib", 0, 1 << 20);
        s.finish();
    }
    {
        TomlSection s = doc.section("rates");
        p.ddr_read_bytes_per_cycle = s.get_double("ddr_read_bytes_per_cycle", 0.1, 1e5);
        p.l2_read_bytes_per_cycle = s.get_double("l2_read_bytes_per_cycle", 0.1, 1e5);
        p.l2_write_bytes_per_cycle = s.get_double("l2_write_bytes_per_cycle", 0.1, 1e5);
        p.l1_to_l0a_bytes_per_cycle = s.get_double("l1_to_l0a_bytes_per_cycle", 0.1, 1e5);
        p.l1_to_l0b_bytes_per_cycle = s.get_double("l1_to_l0b_bytes_per_cycle", 0.1, 1e5);
        p.ub_to_ddr_bytes_per_cycle = s.get_double("ub_to_ddr_bytes_per_cycle", 0.1, 1e5);
        p.vector_bytes_per_cycle = s.get_double("vector_bytes_per_cycle", 1, 1e5);
        s.finish();
    }
    {
        TomlSection s = doc.section("memory");
        p.memory_type = s.get_enum("type", {"hbm2", "hbm2e", "hbm3", "lpddr4x", "lpddr5", "lpddr5x", "gddr6"});
        p.memory_capacity_gib = s.get_double("capacity_gib", 0.01, 1e5);
        p.memory_bandwidth_gbps = s.get_double("bandwidth_gbps", 0.1, 1e6);
        s.finish();
    }
    {
        TomlSection s = doc.section("launch");
        p.launch.eager_host_us = s.get_double("eager_host_us", 0, 1e6);
        p.launch.queue0_host_us = s.get_double("queue0_host_us", 0, 1e6);
        p.launch.queue1_host_us = s.get_double("queue1_host_us", 0, 1e6);
        p.launch.queue2_host_us = s.get_double("queue2_host_us", 0, 1e6);
        p.launch.graph_host_us = s.get_double("graph_host_us", 0, 1e6);
        p.launch.device_task_us = s.get_double("device_task_us", 0, 1e6);
        s.finish();
    }
    {
        TomlSection s = doc.section("serving_step");
        p.serving_step.eager_step_us = s.get_double("eager_step_us", 0, 1e6);
        p.serving_step.graph_step_us = s.get_double("graph_step_us", 0, 1e6);
        s.finish();
    }
    {
        TomlSection s = doc.section("power");
        p.tdp_w = s.get_double("tdp_w", 0, 1e5);
        s.finish();
    }
    doc.finish();
    return p;
}

namespace {

// soc_version/alias -> (file, canonical soc_version)
std::map<std::string, std::pair<std::string, std::string>> catalogue(const std::string& dir) {
    std::map<std::string, std::pair<std::string, std::string>> names;
    for (const auto& f : preset_files(dir)) {
        const NpuPreset p = load_npu_preset_file(f.string());
        names[p.soc_version] = {f.string(), p.soc_version};
        if (!p.alias.empty()) names[p.alias] = {f.string(), p.soc_version};
    }
    return names;
}

}  // namespace

std::vector<std::string> known_soc_versions(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& [name, target] : catalogue(dir))
        out.push_back(name == target.second ? name : name + " (alias of " + target.second + ")");
    return out;
}

NpuPreset load_npu_preset(const std::string& soc_version, const std::string& dir) {
    const auto names = catalogue(dir);
    const auto it = names.find(soc_version);
    if (it == names.end()) {
        std::string known;
        for (const auto& k : known_soc_versions(dir)) known += (known.empty() ? "" : ", ") + k;
        fail("unknown soc_version '{}' (known: {})", soc_version, known.empty() ? "none in " + dir : known);
    }
    return load_npu_preset_file(it->second.first);
}

}  // namespace duet::hw::npu
