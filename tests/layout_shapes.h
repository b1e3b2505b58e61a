#pragma once
// A converter layout's tensor shapes by name: the map the converter's recognition reads from a
// checkpoint, made from a layout so that tests can feed recognition without a checkpoint file.
#include <vector>

#include "converter/layouts.h"

namespace gpen_test {

inline gpen::conv::ShapeMap shapes_of(const std::vector<gpen::conv::TensorSpec>& layout) {
  gpen::conv::ShapeMap m;
  for (const auto& s : layout) m[s.name] = s.shape;
  return m;
}

}  // namespace gpen_test
