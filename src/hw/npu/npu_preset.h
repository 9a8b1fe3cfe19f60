#pragma once
// Ascend NPU presets: one configs/hw/ascend<soc>.toml per CANN soc_version, every number cited
// in the file (CANN platform_config/<SoC>.ini is the primary source). Loaded strictly through
// core/toml_reader.h: unknown keys, wrong types and out-of-range values are errors naming the
// file and key.
//
// Thread safety: presets are immutable values; loading reads files and is reentrant.
// Units are in the field names (_mhz, _kib, _mib, _gib, _gbps, _bytes_per_cycle, _us, _w).
#include <string>
#include <vector>

namespace duet::hw::npu {

// A cube fractal: one MMAD per cycle multiplies an [m0 x k0] by a [k0 x n0] fractal.
struct CubeFractal {
    int m0 = 16, k0 = 16, n0 = 16;
    int macs_per_cycle() const { return m0 * k0 * n0; }
};

// Host/device launch overhead per operator, by dispatch mode (see docs/npu-and-layout-model.md).
struct LaunchOverheads {
    double eager_host_us = 30;   // synchronous launch: host work, then the op, then the next
    double queue0_host_us = 30;  // TASK_QUEUE_ENABLE=0: async launch on the calling thread
    double queue1_host_us = 20;  // TASK_QUEUE_ENABLE=1: launch on a second pipeline thread
    double queue2_host_us = 15;  // TASK_QUEUE_ENABLE=2: level 1 + workspace work moved off
    double graph_host_us = 0;    // graph replay: host cost amortised over the whole graph
    double device_task_us = 3;   // per-task start on the device (scheduling, core start), every mode
};

// Host work of the serving stack once per engine step (scheduler, input preparation, sampling,
// detokenisation, the framework's per-step Python/runtime work) that the device cannot overlap,
// by dispatch family: eager covers eager and queue0/1/2 (operators launched one by one), graph a
// captured graph replayed (ACL graph / TorchAir). docs/hardware-model.md section 6.2 has the sources.
struct StepOverheads {
    double eager_step_us = 0;  // [serving_step] eager_step_us
    double graph_step_us = 0;  // [serving_step] graph_step_us
};

struct NpuPreset {
    std::string file;               // the preset file it came from
    std::string soc_version;        // "Ascend910B2"
    std::string short_soc_version;  // "Ascend910B"
    std::string alias;              // another name accepted for this SoC ("" if none)
    std::string description;

    int cube_cores = 0;          // AI cores with a cube unit (ini ai_core_cnt / cube_core_cnt)
    int vector_cores = 0;        // cores with a vector unit (separate AIV cores, or fused AI cores)
    bool cube_vector_fused = false;  // 310P/310B: vector unit inside the AI core
    double cube_clock_mhz = 0;
    double vector_clock_mhz = 0;
    bool supports_bf16 = false;
    CubeFractal fractal_fp16;    // [DtypeMKN] Default (also bf16 when supported)
    CubeFractal fractal_int8;    // [DtypeMKN] DT_INT8

    double l0a_kib = 0, l0b_kib = 0, l0c_kib = 0, l1_kib = 0, ub_kib = 0;  // per core
    double l2_mib = 0;                                                     // shared

    // Per-core data-path rates, bytes per core clock cycle ([AICoreMemoryRates]).
    double ddr_read_bytes_per_cycle = 0;
    double l2_read_bytes_per_cycle = 0;
    double l2_write_bytes_per_cycle = 0;
    double l1_to_l0a_bytes_per_cycle = 0;
    double l1_to_l0b_bytes_per_cycle = 0;
    double ub_to_ddr_bytes_per_cycle = 0;
    double vector_bytes_per_cycle = 0;  // vector unit throughput per core (vec_calc_size)

    std::string memory_type;     // a memory preset name of hw/dram: "hbm2e", "lpddr4x"
    double memory_capacity_gib = 0;
    double memory_bandwidth_gbps = 0;  // published peak device-memory bandwidth (1e9 B/s)

    LaunchOverheads launch;
    StepOverheads serving_step;
    double tdp_w = 0;            // 0 when not published

    // Peak cube throughput in FLOP/s (2 per MAC) for a dtype: cube_cores * m0*k0*n0 * 2 * clock.
    double peak_cube_flops(bool int8) const;
};

// Directory of the presets: hw::config_dir() + "/hw" ($DUET_CONFIG_DIR/hw if set, else configs/hw).
std::string default_preset_dir();

// Loads and validates one preset file.
NpuPreset load_npu_preset_file(const std::string& path);

// Finds the preset whose soc_version or alias equals `soc_version` (exact, case-sensitive, as
// CANN spells them) among dir/ascend*.toml. Unknown names throw duet::Error listing the known
// ones, e.g. "unknown soc_version 'Ascend910' (known: Ascend310B4, Ascend310P3, Ascend910B
// (alias of Ascend910B2), Ascend910B1, ...)".
NpuPreset load_npu_preset(const std::string& soc_version, const std::string& dir = default_preset_dir());

// "Ascend310B4, Ascend310P3, Ascend910B (alias of Ascend910B2), ..." sorted by name.
std::vector<std::string> known_soc_versions(const std::string& dir = default_preset_dir());

}  // namespace duet::hw::npu
