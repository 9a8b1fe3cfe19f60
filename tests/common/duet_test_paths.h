#pragma once
// Force-included into every test (cmake/DuetHelpers.cmake): DUET_SOURCE_DIR, DUET_SHARED_DIR and
// DUET_BINARY_DIR name the checkout, ../shared and the build folder. They are calls into
// duet_test_paths.cpp, the one test file whose compile line carries absolute paths, so that every
// other test compiles the same in any clone and ccache hits across checkouts.
namespace duet::test_paths {
const char* source_dir();
const char* shared_dir();
const char* binary_dir();
}  // namespace duet::test_paths

#define DUET_SOURCE_DIR (::duet::test_paths::source_dir())
#define DUET_SHARED_DIR (::duet::test_paths::shared_dir())
#define DUET_BINARY_DIR (::duet::test_paths::binary_dir())
