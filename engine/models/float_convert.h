#pragma once
// Floats to and from a network's activation dtype (f32, f16, bf16; round to nearest even), on the
// host: the weights a device graph binds, converted once at upload, and the faces and images that
// cross a 16-bit graph's inputs and outputs on every run (GPEN, RealESRNet, the f32 networks).
#include <cstddef>

#include "engine/core/dtype.h"

namespace gpen {

// n floats into dtype t; f16 uses the F16C instructions when the build has them.
void floats_to(const float* src, void* dst, DType t, size_t n);
// n values of dtype t into floats; f16 through F16C as above.
void floats_from(const void* src, DType t, float* dst, size_t n);

}  // namespace gpen
