#pragma once
// The fixtures of tests/reference/make_transformer_fixtures.py (tests/fixtures/transformer/) and
// the error measure their tests use.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/photo/npy.h"

namespace transformer_fixture {

struct Fix {
  gpen::Shape shape;
  std::vector<float> v;
  gpen::TensorView view() { return gpen::make_view(v.data(), gpen::DType::f32, shape); }
};

inline Fix load(const std::string& name) {
  gpen::npy::Array a = gpen::npy::load(std::string(GPEN_FIXTURE_DIR) + "/transformer/" + name + ".npy");
  return {a.engine_shape(), a.to_f32()};
}

// The largest |got - want| / (1 + |want|).
inline double worst_rel(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  double w = 0;
  for (size_t i = 0; i < got.size(); ++i)
    w = std::max(w, std::abs(double(got[i]) - want[i]) / (1.0 + std::abs(want[i])));
  return w;
}

}  // namespace transformer_fixture
