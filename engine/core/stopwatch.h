#pragma once
// Milliseconds of wall time since a steady_clock reading: the stage times of the pipeline and CLI.
#include <chrono>

namespace gpen {

inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace gpen
