// FullGenerator_SR (the official FaceGAN with out_size > in_size) and GPEN model naming: the parts
// of the GPEN layout code that concern a decoder larger than its encoder.
#include <string>

#include "converter/layouts.h"
#include "engine/core/error.h"

namespace gpen::conv {

int GpenConfig::log_output_size() const {
  int l = 0;
  while ((1 << l) < output_size() && l < 30) ++l;
  return l;
}

std::string gpen_model_name(const GpenConfig& c) {
  if (c.is_sr()) return "FullGenerator_SR " + std::to_string(c.size) + " -> " + std::to_string(c.out_size);
  return "FullGenerator " + std::to_string(c.size);
}

int infer_gpen_out_size(const ShapeMap& m, int L) {
  // One ToRGB per doubling from 8 up to the decoder's resolution.
  int rgbs = 0;
  while (rgbs < 16 && m.count("generator.to_rgbs." + std::to_string(rgbs) + ".conv.weight")) ++rgbs;
  if (rgbs == 0) throw Error("GPEN checkpoint lacks tensor 'generator.to_rgbs.0.conv.weight'");
  const int LO = rgbs + 2;
  if (LO < L)
    throw Error("GPEN checkpoint has an encoder for " + std::to_string(1 << L) + "x" + std::to_string(1 << L) +
                " but a decoder for " + std::to_string(1 << LO) + "x" + std::to_string(1 << LO) +
                " (generator.to_rgbs.0.." + std::to_string(rgbs - 1) +
                "): a decoder smaller than its encoder is no GPEN layout");
  if (LO > 11)
    throw Error("GPEN checkpoint has " + std::to_string(rgbs) +
                " decoder ToRGB layers: not an output size up to 2048");
  return LO > L ? 1 << LO : 0;
}

}  // namespace gpen::conv
