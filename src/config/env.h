#pragma once
// DUET_* environment overrides. Names: settings.json keys are DUET_<KEY> (DUET_SEQ_LEN,
// DUET_SOC_VERSION); config.toml keys are DUET_<SECTION>_<KEY> (DUET_PIM_ALIGNMENT,
// DUET_REORDER_PREFETCH_DEPTH). Other DUET_* variables (e.g. the API key itself) are ignored.
// An override is validated like the file value; errors name the variable.
#include <map>
#include <string>

namespace duet::config {

using EnvMap = std::map<std::string, std::string>;

// Every DUET_* variable of this process (reads `environ`; call from one thread).
EnvMap process_env();

}  // namespace duet::config
