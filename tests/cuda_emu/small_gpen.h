#pragma once
// The GPEN the whole-model CUDA tests run: small enough for the emulator under ASan (32 x 32,
// 16 channels, style_dim 16), with every op of the real one.
#include "engine/core/dtype.h"
#include "engine/models/gpen.h"

namespace cuda_test {

inline gpen::GpenConfig small_gpen(gpen::DType precision) {
  gpen::GpenConfig c;
  c.size = 32;
  c.channel_multiplier = 1;
  c.narrow = 1.0 / 32;
  c.style_dim = 16;
  c.act_dtype = precision;
  return c;
}

}  // namespace cuda_test
