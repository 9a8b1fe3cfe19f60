#include "workload/pim_precision.h"

#include <fmt/format.h>

#include "hw/pim/pim_device.h"

namespace duet::workload {

PimPrecisionChoice choose_pim_precision(config::PimPrecision configured, const std::string& runtime_dtype,
                                        const hw::Device* pim0, const std::string& pim_preset) {
    const auto* pim = dynamic_cast<const hw::pim::PimDevice*>(pim0);
    const bool fp16 = pim && pim->spec().supports(DType::F16), bf16 = pim && pim->spec().supports(DType::BF16);
    PimPrecisionChoice c;
    c.precision = configured;
    if (configured == config::PimPrecision::AUTO) {
        c.precision = runtime_dtype == "bf16" ? config::PimPrecision::BF16 : config::PimPrecision::FP16;
        if (c.precision == config::PimPrecision::FP16 && !fp16 && bf16) {
            c.precision = config::PimPrecision::BF16;
            c.automatic = true;
            c.note = fmt::format("bf16 chosen automatically: PIM preset '{}' has bf16 MACs only (config.toml [pim] "
                                 "precision = \"auto\"; settings runtime.dtype = \"{}\" stays on the NPU)",
                                 pim_preset, runtime_dtype);
        }
    }
    if (!pim || c.precision == config::PimPrecision::INT8) return c;  // int8: widened where no int8 MACs (PimDevice)
    const bool want_bf16 = c.precision == config::PimPrecision::BF16;
    c.supported = want_bf16 ? bf16 : fp16;
    if (!c.supported)
        c.note = fmt::format("PIM preset '{}' has no {} MACs: the PIM runs no operator (config.toml [pim] "
                             "precision = \"{}\"; allowed for this preset: {}auto)",
                             pim_preset, want_bf16 ? "bf16" : "f16", config::pim_precision_name(configured),
                             std::string(fp16 ? "f16, " : "") + (bf16 ? "bf16, " : ""));
    return c;
}

}  // namespace duet::workload
