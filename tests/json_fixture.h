#pragma once
// Reading the JSON fixtures of tests/reference's scripts (manifests, alignment transforms).
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "kernels/cpu/warp.h"

namespace gpen_test {

// The parsed file; a missing file fails the test with its path.
inline nlohmann::json load_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "missing " << path);
  return nlohmann::json::parse(in);
}

// A 2x3 affine matrix written as nested lists ([[a, b, c], [d, e, f]], cv2's layout).
inline gpen::AffineTransform matrix(const nlohmann::json& m) {
  gpen::AffineTransform t;
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) t.m[static_cast<size_t>(r * 3 + c)] = m[r][c].get<double>();
  return t;
}

}  // namespace gpen_test
