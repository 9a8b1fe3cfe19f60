// `duet version`, `duet --version` and `duet pim-sim --version`: the build, the host's
// instruction sets and the device models the simulator carries.
#include <cstdio>

#include "cli/commands.h"
#include "config/field.h"
#include "core/cpu_features.h"
#include "hw/memory_presets.h"
#include "hw/npu/npu_preset.h"

namespace duet::cli {

void register_version(CLI::App& app) {
    app.set_version_flag("--version", "duet " DUET_VERSION_STRING);
    auto* cmd = app.add_subcommand("version",
                                  "Print the version and the CPU features duet will use. Example:\n"
                                  "  DUET_ISA=avx2 duet version   # what the kernels pick when capped at AVX2");
    cmd->callback([] {
        std::printf("duet " DUET_VERSION_STRING "\ncpu features: %s\nkernel isa: %s\n", cpu_feature_string().c_str(),
                    isa_name(isa_level()));
    });
}

void register_pim_sim_version(CLI::App& app) {
    CLI::App* pim = nullptr;
    try {
        pim = app.get_subcommand("pim-sim");
    } catch (const CLI::OptionNotFound&) {
        return;
    }
    pim->set_version_flag("--version", [] {
        std::string npus, pims;
        try {
            npus = config::join_names(hw::npu::known_soc_versions());
            pims = config::join_names(hw::pim_preset_names());
        } catch (const std::exception& e) {
            npus = e.what();
        }
        return "duet pim-sim " DUET_VERSION_STRING " (modelled devices; no hardware or CANN needed)\nNPU presets: " + npus +
               "\nPIM presets: " + pims;
    });
}

}  // namespace duet::cli
