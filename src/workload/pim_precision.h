#pragma once
// The operand type of the PIM weight base (config.toml [pim] precision) a comparison models, and
// whether the PIM preset can compute in it.
#include <string>

#include "config/coop_config.h"
#include "hw/device.h"

namespace duet::workload {

// The PIM weight base's operand type for config.toml [pim] precision. `configured` AUTO: bf16
// for runtime_dtype bf16; else f16, or bf16 (automatic = true) when pim0 (a
// hw::pim::PimDevice of preset `pim_preset`) has bf16 MACs and no f16 MACs. `supported` is false
// when pim0 has no MACs of the chosen type (i8 is always supported: widened by the PIM model);
// `note` then names the knob, else states an automatic choice ("" when neither).
struct PimPrecisionChoice {
    config::PimPrecision precision = config::PimPrecision::FP16;
    bool automatic = false;
    bool supported = true;
    std::string note;
};
PimPrecisionChoice choose_pim_precision(config::PimPrecision configured, const std::string& runtime_dtype,
                                        const hw::Device* pim0, const std::string& pim_preset);

}  // namespace duet::workload
