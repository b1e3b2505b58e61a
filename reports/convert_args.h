#pragma once
// `gpen convert`'s options as the user spells them, and the converter options they mean: one
// reading for the CLI (apps/cmd_convert.cpp) and the Python binding (gpen_engine.convert).
#include <cstdint>
#include <string>

#include "converter/convert.h"

namespace gpen::report {

struct ConvertArgs {
  std::string in, out, arch = "auto", key, dtype = "fp32", task, dense_dtype = "fp32", dense_layers = "modulation";
  int64_t group_size = 0;
};

// Throws gpen::Error naming the bad value (architecture, dtype, dense-layer list, group size).
conv::ConvertOptions convert_options(const ConvertArgs& a);

}  // namespace gpen::report
