#pragma once
// Where a test finds its inputs: the compile-time paths of the build machine, unless the
// environment names others. A bundle of test binaries carried to another machine
// (scripts/gpu_bundle.sh) sets GPEN_FIXTURE_DIR, GPEN_SHARED_DIR and GPEN_BINARY_DIR there.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace gpen_test {

inline std::string dir_from_env(const char* name, const char* built_in) {
  const char* v = std::getenv(name);
  return v && *v ? v : built_in;
}
// tests/fixtures
inline std::string fixture_dir() { return dir_from_env("GPEN_FIXTURE_DIR", GPEN_FIXTURE_DIR); }
// ../shared (models/, images/, reference/)
inline std::string shared_dir() { return dir_from_env("GPEN_SHARED_DIR", GPEN_SHARED_DIR); }
// the folder that holds the gpen CLI
inline std::string binary_dir() { return dir_from_env("GPEN_BINARY_DIR", GPEN_BINARY_DIR); }
// A scratch file or folder of this process: ctest runs the variants of one test binary
// (avx512/, winograd/, ...) at the same time, so a fixed name would be shared between them.
inline std::filesystem::path scratch_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("gpen_" + std::to_string(::getpid()) + "_" + name);
}

}  // namespace gpen_test
