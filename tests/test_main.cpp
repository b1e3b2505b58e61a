#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "engine/core/error.h"
#include "engine/runtime/env_options.h"

// The environment's options apply before any test runs, as in the CLI: ctest registers the CPU
// tests once per ISA path through GPEN_CPU_ISA (tests/CMakeLists.txt).
int main(int argc, char** argv) {
  try {
    gpen::cpu_options_from_env();
  } catch (const gpen::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return doctest::Context(argc, argv).run();
}
