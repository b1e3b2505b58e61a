#pragma once
// Decoding of the 8-bit weight codes (DType::i8, DType::f8e4m3; docs/weights-format.md, "8-bit
// weights"). Header-only and free of library calls so the CPU kernels, the CUDA kernels and the
// emulator decode with one definition: weight = q8_decode(code) * scale[o], one f32 multiply,
// which is what makes the 8-bit paths equal to an fp32 run on the dequantised weights.
#include <cstdint>

#if defined(__CUDACC__)
#define GPEN_Q8_HD __host__ __device__ __forceinline__
#else
#define GPEN_Q8_HD inline
#endif

namespace gpen {

// Largest finite e4m3 magnitude (1.75 * 2^8): per-channel fp8 scales map amax onto it.
constexpr float kF8e4m3Max = 448.0f;
// int8 is symmetric: codes -127..127 (-128 is never written).
constexpr float kI8Max = 127.0f;

// OCP FP8 E4M3 (1 sign, 4 exponent bits with bias 7, 3 mantissa bits, no infinities): the value
// is (8 + m) * 2^(e - 10) for e >= 1 and 2m * 2^-10 for subnormals (e = 0), both exact in f32 and
// computed here with integer shifts and one multiply by a power of two (no bit casts, so the same
// code compiles for the device). Codes 0x7f / 0xff (NaN in the standard) are never written by
// the converter; they decode to 480 here.
GPEN_Q8_HD float f8e4m3_to_f32(uint8_t c) {
  const int e = (c >> 3) & 15, m = c & 7;
  const int mag = e == 0 ? (m << 1) : ((8 + m) << e);
  const float v = static_cast<float>(mag) * (1.0f / 1024.0f);
  return (c & 0x80) ? -v : v;
}

GPEN_Q8_HD float i8_code_to_f32(uint8_t c) { return static_cast<float>(static_cast<int8_t>(c)); }

// The code's value before scaling; fp8 selects e4m3, else int8.
GPEN_Q8_HD float q8_code_value(uint8_t c, bool fp8) { return fp8 ? f8e4m3_to_f32(c) : i8_code_to_f32(c); }

// The dequantised weight.
GPEN_Q8_HD float q8_dequant(uint8_t c, bool fp8, float scale) { return q8_code_value(c, fp8) * scale; }

// Where the scale of reduction row k, output channel o (of `cout`) lies: per channel (group 0) or
// per channel and group of `group` consecutive rows (the scales then [ceil(K / group)][cout]).
GPEN_Q8_HD int64_t q8_scale_index(int64_t k, int64_t o, int64_t cout, int64_t group) {
  return group > 0 ? (k / group) * cout + o : o;
}

}  // namespace gpen
