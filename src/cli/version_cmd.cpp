// `duet version`: the build and the host's instruction sets.
#include <cstdio>

#include "cli/commands.h"
#include "core/cpu_features.h"

namespace duet::cli {

void register_version(CLI::App& app) {
    auto* cmd = app.add_subcommand("version",
                                  "Print the version and the CPU features duet will use. Example:\n"
                                  "  DUET_ISA=avx2 duet version   # what the kernels pick when capped at AVX2");
    cmd->callback([] {
        std::printf("duet 0.1.0\ncpu features: %s\nkernel isa: %s\n", cpu_feature_string().c_str(),
                    isa_name(isa_level()));
    });
}

}  // namespace duet::cli
