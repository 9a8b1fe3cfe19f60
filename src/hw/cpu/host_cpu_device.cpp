#include "hw/cpu/host_cpu_device.h"

#include <algorithm>

#include "core/toml_reader.h"
#include "hw/memory_presets.h"

namespace duet::hw::cpu {

HostCpuSpec load_host_cpu_preset(const std::string& name, const std::string& dir) {
    const std::string path = (dir.empty() ? config_dir() : dir) + "/hw/host_cpu.toml";
    TomlDoc doc = TomlDoc::parse_file(path);
    TomlSection s = doc.section(name);
    HostCpuSpec c;
    c.name = name;
    c.memory_bandwidth_gbps = s.get_double("memory_bandwidth_gbps", 1, 1e5);
    c.peak_gflops = s.get_double("peak_gflops", 1, 1e7);
    c.op_overhead_ns = s.get_double("op_overhead_ns", 0, 1e9);
    c.sampling_ns = s.get_double_or("sampling_ns", 0, 0, 1e9);
    c.pj_per_byte = s.get_double("pj_per_byte", 0, 1e4);
    s.finish();
    return c;
}

bool HostCpuDevice::supports(const OpShape& op) const {
    return op.weight_bytes + op.in_bytes + op.out_bytes > 0 || op.flops > 0;
}

Cost HostCpuDevice::estimate(const OpShape& op) const {
    Cost c;
    c.bytes_moved = double(op.weight_bytes + op.in_bytes + op.out_bytes);
    const double mem_ns = c.bytes_moved / spec_.memory_bandwidth_gbps;
    const double compute_ns = op.flops / spec_.peak_gflops;
    c.t_launch_ns = spec_.op_overhead_ns;
    c.t_ns = spec_.op_overhead_ns + std::max(mem_ns, compute_ns);
    if (op.elem == ElemOp::SAMPLE) c.t_ns += spec_.sampling_ns * double(std::max<int64_t>(op.m, 1));
    c.bound = compute_ns > mem_ns ? "compute" : "memory";
    c.energy_pj = c.bytes_moved * spec_.pj_per_byte;
    return c;
}

}  // namespace duet::hw::cpu
