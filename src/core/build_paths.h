#pragma once
// Folders fixed when duet was built. They live in one translation unit (build_paths.cpp) so that
// no other compile line carries the checkout's absolute path: ccache then hits across clones.
namespace duet::core {

// The source tree's configs/ folder (settings.json, config.toml, hw/*.toml).
const char* default_config_dir();

}  // namespace duet::core
