#include "core/build_paths.h"

// Set for this file only by src/core/CMakeLists.txt.
#ifndef DUET_DEFAULT_CONFIG_DIR
#define DUET_DEFAULT_CONFIG_DIR "configs"
#endif

namespace duet::core {

const char* default_config_dir() { return DUET_DEFAULT_CONFIG_DIR; }

}  // namespace duet::core
