#pragma once
// config.toml: PIM layout, weight reorder, scheduling and memory knobs (DESIGN.md
// "Configuration"; every knob's effect on the report is described in docs/configuration.md).
//   [pim]        layout, alignment (bits: 128 or 256), compute_unit, precision
//   [reorder]    block_size_kb (power of two), target_format, index_ratio_limit, prefetch_depth
//   [scheduling] prefill_engine, decode_engine, zero_copy_switch, preconvert_first_token,
//                npu_only_layers (per-layer override, e.g. "0-1,31"; empty = none)
//   [memory]     weight_base_shared, index_granularity, cache_limit_mb
// Missing keys keep the defaults (== configs/config.toml); unknown keys are errors.
// DUET_<SECTION>_<KEY> variables override the file (DUET_PIM_ALIGNMENT, ...).
// Thread safety: plain value type.
#include <cstdint>
#include <string>
#include <vector>

#include "config/diagnostics.h"
#include "config/env.h"
#include "config/field.h"

namespace duet::config {

struct PimSection {
    std::string layout = "row_major_128bit";
    int64_t alignment_bits = 128;     // key `alignment`: layout granule in bits (128 or 256), rows padded to it
    std::string compute_unit = "gemv";  // "gemv": PIM runs weight GEMVs; "gemv_attention": also decode attention
    std::string precision = "fp16";
};

struct ReorderSection {
    int64_t block_size_kb = 16;
    std::string target_format = "NZ";  // what the NPU converts blocks into for prefill
    double index_ratio_limit = 0.05;   // block index bytes / weight bytes must stay below
    int64_t prefetch_depth = 4;        // blocks converted ahead of the block being computed
};

struct SchedulingSection {
    std::string prefill_engine = "npu_gemm";
    std::string decode_engine = "pim_gemv";
    bool zero_copy_switch = true;
    bool preconvert_first_token = true;
    std::string npu_only_layers;  // "" or a list like "0-1,31"
};

struct MemorySection {
    bool weight_base_shared = true;
    int64_t index_granularity = 64;  // weight-base bytes covered by one block-index entry, in units of 16 B granules
    int64_t cache_limit_mb = 512;    // conversion cache: prefetch buffers + preconverted tiles
};

struct CoopConfig {
    PimSection pim;
    ReorderSection reorder;
    SchedulingSection scheduling;
    MemorySection memory;
};

const std::vector<Field<CoopConfig>>& coop_config_fields();

// Loads `path` (empty: defaults), then DUET_* overrides from `env`. Errors go to `diag`.
CoopConfig load_coop_config(const std::string& path, const EnvMap& env, Diagnostics& diag);
CoopConfig load_coop_config(const std::string& path, const EnvMap& env);

// The rules between keys (pim.layout needs the matching pim.alignment), applied by the loader
// after the file and the environment, and by tasks and `duet tune` to their combinations, so
// every source is refused with the same message. `where` names the source.
void check_coop_config(const CoopConfig& c, const std::string& where, Diagnostics& diag);

// Parses npu_only_layers ("0-1,31") into a sorted list; throws duet::Error naming `where`.
std::vector<int> parse_layer_list(const std::string& text, const std::string& where);

}  // namespace duet::config
