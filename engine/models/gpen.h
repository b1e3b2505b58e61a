#pragma once
// The GPEN FullGenerator as an engine graph (../shared/reference/gpen-semantics.md), with weight
// names and layouts as the converter writes them (docs/weights-format.md).
#include <string>
#include <vector>

#include "engine/graph/graph.h"

namespace gpen {

// The dense layers an 8-bit dense dtype applies to (GpenConfig::dense8_layers, `--dense-layers`).
enum Dense8Layer : int {
  kDense8Modulation = 1,   // *.conv.modulation.weight: one style per layer
  kDense8FinalLinear = 2,  // final_linear.0.weight: the encoder's 4x4 features to the latent
  kDense8StyleMlp = 4,     // generator.style.*.weight: the 8-layer mapping network
  kDense8All = 7,
};
// "modulation", "final_linear", "style", "all" or a comma-separated list of them; throws naming
// the bad item.
int parse_dense8_layers(const std::string& list);

struct GpenConfig {
  int size = 512;  // input and encoder resolution
  // FullGenerator_SR: the decoder's resolution when larger than `size` (0: a FullGenerator, output
  // = size). The StyledConvs above `size` take fresh N(0, 1) noise instead of encoder features.
  int out_size = 0;
  int channel_multiplier = 2;
  double narrow = 1.0;
  int style_dim = 512;  // 512 in every released model; small test models use less
  int batch = 1;
  DType act_dtype = DType::f32;     // activations in the arena
  DType weight_dtype = DType::f32;  // conv and linear weights (biases, Q tables: act_dtype)
  // DType::i8 / f8e4m3: the big convs (decoder 3x3 modconvs, encoder 3x3 convs) take 8-bit codes
  // plus a `<name>.qscale` f32 weight [Cout] ([G, Cout] with q8_group); ToRGB, the first encoder conv and the dense layers
  // keep weight_dtype. f32: no 8-bit weights.
  DType quant8 = DType::f32;
  // With quant8 set: the dense layers (style MLP, modulation linears, final_linear) as 8-bit codes
  // too (DType::i8 / f8e4m3; scales per output row), else they keep weight_dtype.
  DType dense8 = DType::f32;
  int dense8_layers = kDense8All;  // which dense layers dense8 applies to (Dense8Layer bits)
  // 8-bit scales per group of about this many consecutive reduction rows (weights/quant8.h
  // q8_group_for); 0: one scale per output channel (row), the original format.
  int q8_group = 0;
  std::string describe() const;
  int output_size() const { return out_size > 0 ? out_size : size; }
};

// Channels at resolution r, exactly as the official int() truncation computes them.
int gpen_channels(const GpenConfig& c, int r);
void validate_gpen_config(const GpenConfig& c);  // throws gpen::Error naming the bad value

struct GpenGraph {
  Graph graph;
  int input = -1;   // [N, S, S, 3] RGB in [-1, 1]
  int output = -1;  // [N, O, O, 3] raw generator output (not clipped), O = output_size()
  // FullGenerator_SR: one graph input per StyledConv above `size`, in decoder order
  // (convs.{2i} then convs.{2i+1}), [N, r, r, ch(r)], to fill with N(0, 1) noise before each run.
  std::vector<int> noise;
};

GpenGraph build_gpen_graph(const GpenConfig& c);

}  // namespace gpen
