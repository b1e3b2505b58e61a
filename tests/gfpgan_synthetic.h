#pragma once
// A random-weight GFPGANv1Clean at 512 x 512, the size GFPGAN's photo flow aligns faces to, kept
// small for the tests that run the flow (narrow 1/8, channel multiplier 1, 64 style features):
// the synthetic weights `gpen bench --arch gfpgan` times (converter/synthetic_gfpgan.h).
#include <cstdint>
#include <string>

#include "converter/convert.h"
#include "converter/layouts.h"
#include "converter/synthetic_gfpgan.h"

namespace gpen_test {

inline void write_small_gfpgan(const std::string& gpw, uint32_t seed = 1) {
  gpen::conv::GfpganConfig c;
  c.out_size = 512;
  c.num_style_feat = 64;
  c.channel_multiplier = 1;
  c.narrow = 0.125;
  gpen::conv::convert(gpen::conv::SyntheticGfpganCheckpoint(c, seed), gpw);
}

}  // namespace gpen_test
