// The paths behind duet_test_paths.h; the definitions come from cmake/DuetHelpers.cmake.
namespace duet::test_paths {
const char* source_dir() { return DUET_TEST_SOURCE_DIR; }
const char* shared_dir() { return DUET_TEST_SHARED_DIR; }
const char* binary_dir() { return DUET_TEST_BINARY_DIR; }
}  // namespace duet::test_paths
