#pragma once
// Quantisation of float weights to the 8-bit codes of engine/core/quant8.h: symmetric int8 or
// OCP e4m3, one f32 scale per output channel (the last axis of an HWIO conv weight), chosen so
// the channel's largest magnitude maps onto the largest code (127, 448). Used by the converter
// (`gpen convert --dtype int8|fp8`) and by synthetic models; the rules are in
// docs/weights-format.md ("8-bit weights").
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/dtype.h"
#include "engine/core/quant8.h"
#include "engine/core/tensor.h"

namespace gpen {

struct Quantized8 {
  std::vector<uint8_t> codes;  // same layout as the input
  std::vector<float> scale;    // [cout]
};

// w: `n` floats whose last axis has `cout` entries (n % cout == 0); dt: i8 or f8e4m3.
// Scale: amax / 127 (int8) or amax / 448 (fp8), 0 for an all-zero channel (codes 0).
// Codes: round to nearest, ties to even, of w / scale (in double), saturated.
Quantized8 quantize8(const float* w, int64_t n, int64_t cout, DType dt);
// Only the scales (what quantize8 would return in .scale).
std::vector<float> quantize8_scales(const float* w, int64_t n, int64_t cout, DType dt);
// The nearest e4m3 code of v (ties to even, saturating at +-448).
uint8_t f32_to_f8e4m3(float v);
// Dequantised floats: q8_dequant(code, fp8, scale[i % cout]).
std::vector<float> dequantize8(const uint8_t* codes, const float* scale, int64_t n, int64_t cout, DType dt);

// Per-group scales (docs/weights-format.md, "Per-group scales"). The axes of an 8-bit weight:
// rank 2 is a dense weight [out][in] (output axis 0, reduction axis 1), anything else is HWIO
// (output = the last axis, reduction row k = the flat index of the others).
struct Q8Axes {
  int64_t out = 1, k = 1;
  bool out_first = false;  // dense [out][in]
};
Q8Axes q8_axes(const Shape& w);
// The group of consecutive reduction rows per scale for a requested size: G = ceil(K / request)
// groups of ceil(K / G) rows (the last one may be shorter); 0 (one scale per output channel) when
// request is 0 or G is 1.
int64_t q8_group_for(int64_t k, int64_t request);
// The scale tensor of a weight quantised with `group` (q8_group_for's result): [out] for 0, else
// [ceil(K / group), out].
Shape q8_scale_shape(const Shape& w, int64_t group);
// The group a scale tensor of shape `scale` encodes for weight `w`: true and *group set (0: per
// channel) when the shape is [out] or [G, out] with 1 <= G <= K and ceil(K / ceil(K / G)) == G.
bool q8_group_of(const Shape& w, const Shape& scale, int64_t* group);
// The message for a scale tensor that q8_group_of refuses (what is expected).
std::string q8_scale_expectation(const Shape& w);

// Quantisation with per-group scales: `shape` gives the axes (q8_axes), `request` the group size
// (0: per channel, the same codes and scales as quantize8). Scale = amax of the group's values /
// 127 (448); result.group is q8_group_for(K, request), result.scale q8_scale_shape's layout.
struct Quantized8Grouped : Quantized8 {
  int64_t group = 0;
};
Quantized8Grouped quantize8_grouped(const float* w, const Shape& shape, DType dt, int64_t request);
// Dequantised floats of quantize8_grouped's output.
std::vector<float> dequantize8_grouped(const uint8_t* codes, const float* scale, const Shape& shape, DType dt,
                                       int64_t group);

}  // namespace gpen
