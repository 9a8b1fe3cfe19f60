#pragma once
// config.toml: PIM layout, weight reorder, scheduling and memory knobs (docs/design.md
// "Configuration"; every knob's effect on the report is described in docs/configuration.md).
//   [pim]        layout, alignment (bits: 128 or 256), compute_unit, precision
//   [reorder]    block_size_kb (power of two), target_format, index_ratio_limit, prefetch_depth
//   [scheduling] prefill_engine, decode_engine, zero_copy_switch, preconvert_first_token,
//                npu_only_layers (per-layer override, e.g. "0-1,31"; empty = none)
//   [memory]     weight_base_shared, index_granularity, cache_limit_mb
//   [topology]   npus, pims, npu_link, pim_link, pim_presets, ep, tp_split (docs/topology.md; also read from
//                a file named by `duet bench --topology`, see load_topology_file)
// Enumerated knobs are validated once, at load, into the typed enums below; nothing
// downstream compares their spelling again.
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

enum class PimLayout { ROW_MAJOR_128BIT, ROW_MAJOR_256BIT };  // "row_major_128bit", "row_major_256bit"
enum class ComputeUnit { GEMV, GEMV_ATTENTION };                // "gemv", "gemv_attention"
// INT8: FILE mode holds Q8_0 matrices as int8 quants with their f16 block scales beside them
// (layout/pim_int8.h) and the PIM model runs them as int8 MACs, or widened to the preset's 16-bit
// float MACs where it has no int8 lanes (stated in the report).
// AUTO (the default): the PIM's operand type follows settings runtime.dtype, except that a PIM
// preset without fp16 MACs (GDDR6-AiM: bf16 only) gets bf16 for f16 (workload/pim_precision.h).
enum class PimPrecision { FP16, BF16, INT8, AUTO };             // "f16", "bf16", "i8", "auto" (fp16, int8 aliases)
enum class TargetFormat { NZ, ND };                             // "NZ", "ND"
enum class PrefillEngine { NPU_GEMM, PIM_GEMV };                // "npu_gemm", "pim_gemv"
enum class DecodeEngine { PIM_GEMV, NPU_GEMV };                 // "pim_gemv", "npu_gemv"
const char* pim_precision_name(PimPrecision p);                 // as written in config.toml

struct PimSection {
    PimLayout layout = PimLayout::ROW_MAJOR_128BIT;
    int64_t alignment_bits = 128;     // key `alignment`: layout granule in bits (128 or 256), rows padded to it
    ComputeUnit compute_unit = ComputeUnit::GEMV;  // GEMV: PIM runs weight GEMVs; GEMV_ATTENTION: also decode attention
    PimPrecision precision = PimPrecision::AUTO;
};

struct ReorderSection {
    int64_t block_size_kb = 16;
    TargetFormat target_format = TargetFormat::NZ;  // what the NPU converts blocks into for prefill
    double index_ratio_limit = 0.05;   // block index bytes / weight bytes must stay below
    int64_t prefetch_depth = 4;        // blocks converted ahead of the block being computed
};

struct SchedulingSection {
    PrefillEngine prefill_engine = PrefillEngine::NPU_GEMM;
    DecodeEngine decode_engine = DecodeEngine::PIM_GEMV;
    bool zero_copy_switch = true;
    bool preconvert_first_token = true;
    std::string npu_only_layers;  // "" or a list like "0-1,31"
};

struct MemorySection {
    bool weight_base_shared = true;
    int64_t index_granularity = 64;  // weight-base bytes covered by one block-index entry, in units of 16 B granules
    int64_t cache_limit_mb = 512;    // conversion cache: prefetch buffers + preconverted tiles
};

// How tensor-parallel ranks divide a layer (graph::TpPartition, docs/scale-out.md):
// "megatron" (heads and FFN features per rank, all-reduced partial sums) or "cent" (CENT's
// model-parallel trace: every matrix split by output rows and gathered, attention and the
// element-wise work whole on every rank).
enum class TpSplitMode { MEGATRON, CENT };

// The simulated machine (docs/topology.md): npu0 is the host; every other device has one
// link to it, of the named preset in configs/hw/links.toml.
struct TopologySection {
    int64_t npus = 1;                      // NPUs of settings ascend.soc_version
    int64_t pims = 1;                      // PIM devices (0: none)
    std::string npu_link = "hccs_910b";    // link preset joining npu1.. to npu0
    std::string pim_link = "shared_hbm";   // link preset joining each PIM device to npu0
    std::string pim_presets;               // "" (all the default preset) or one name per PIM device, comma-separated
    int64_t ep = 1;                        // expert-parallel ranks of a MoE model (duet bench --ep; docs/scale-out.md)
    TpSplitMode tp_split = TpSplitMode::MEGATRON;  // "megatron" | "cent": the tensor-parallel partition
};

struct CoopConfig {
    PimSection pim;
    ReorderSection reorder;
    SchedulingSection scheduling;
    MemorySection memory;
    TopologySection topology;
};

// Link preset names [topology] npu_link / pim_link accept (configs/hw/links.toml sections).
const std::vector<std::string>& link_preset_names();

// A topology file (`duet bench --topology FILE`): a [topology] section with the keys above and
// nothing else. Keys it sets override `base`; errors name the file, key, value and what is allowed.
TopologySection load_topology_file(const std::string& path, const TopologySection& base);

// Throws duet::Error when pim_presets names a number of presets other than `pims` (checked on
// the final topology, after config.toml, --topology and --pims are applied).
void check_pim_presets(const TopologySection& t);

// Splits "a,b" into names (empty text: none).
std::vector<std::string> split_names(const std::string& text);

const std::vector<Field<CoopConfig>>& coop_config_fields();

// Loads `path` (empty: defaults), then DUET_* overrides from `env`. Errors go to `diag`.
CoopConfig load_coop_config(const std::string& path, const EnvMap& env, Diagnostics& diag);
CoopConfig load_coop_config(const std::string& path, const EnvMap& env);

// The rules between keys (pim.layout needs the matching pim.alignment), applied by the loader
// after the file and the environment, and by tasks and `duet tune` to their combinations, so
// every source is refused with the same message. `where` names the source.
void check_coop_config(const CoopConfig& c, const std::string& where, Diagnostics& diag);

// Parses npu_only_layers ("0-1,31") into a sorted list; throws duet::Error naming `where`,
// also for a layer above kMaxLayerIndex, or, when `model` names the model, for a layer at or
// past its `n_layer` layers (both checked before a range is expanded).
constexpr int kMaxLayerIndex = 4095;  // gen-model's --layers maximum is 4096
std::vector<int> parse_layer_list(const std::string& text, const std::string& where,
                                  int64_t n_layer = kMaxLayerIndex + 1, const std::string& model = "");

}  // namespace duet::config
