#pragma once
// Quantisation of float weights to the 8-bit codes of engine/core/quant8.h: symmetric int8 or
// OCP e4m3, one f32 scale per output channel (the last axis of an HWIO conv weight), chosen so
// the channel's largest magnitude maps onto the largest code (127, 448). Used by the converter
// (`gpen convert --dtype int8|fp8`) and by synthetic models; the rules are in
// docs/weights-format.md ("8-bit weights").
#include <cstdint>
#include <vector>

#include "engine/core/dtype.h"
#include "engine/core/quant8.h"

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

}  // namespace gpen
