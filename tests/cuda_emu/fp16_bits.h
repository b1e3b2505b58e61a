#pragma once
// Bit-exact float <-> IEEE half and float <-> bfloat16 conversions with round-to-nearest-even,
// the rounding of the GPU's cvt.rn instructions (and of __float2half / __float2bfloat16).
// Plain C++ with no dependencies: the emulator's __half and __nv_bfloat16 use it, and so do the
// CUDA tests, to prepare inputs and references in both emulated and native runs.
#include <cstdint>
#include <cstring>

namespace cuda_emu {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline uint16_t float_to_half_bits(float f) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return 0x7fffu;                  // NaN: the hardware's canonical NaN
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (ax >= 0x38800000u) {                                // normal half range (>= 2^-14)
    // Rebias the exponent (127 -> 15) and round away the low 13 mantissa bits, ties to even; a
    // carry out of the mantissa correctly bumps the exponent.
    const uint32_t rounded = ax + 0x0fffu + ((ax >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rounded - (112u << 23)) >> 13));
  }
  const uint32_t e = ax >> 23;
  if (e < 102) return static_cast<uint16_t>(sign);        // below 2^-25: rounds to zero
  // Subnormal half: the value in units of 2^-24 is mant >> (126 - e); round the shifted-out bits.
  const uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - e;                         // 14 .. 24
  uint32_t q = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u))) ++q;        // may carry into the smallest normal
  return static_cast<uint16_t>(sign | q);
}

inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));  // inf / NaN
  if (exp != 0) return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return bits_float(sign);
  // Subnormal: normalise the mantissa into a float exponent.
  uint32_t e = 113;
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return bits_float(sign | (e << 23) | ((mant & 0x3ffu) << 13));
}

inline uint16_t float_to_bf16_bits(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;    // NaN: canonical
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

inline float bf16_bits_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

// The float nearest to f that the 16-bit type can hold (what a round trip through it gives).
inline float round_to_half(float f) { return half_bits_to_float(float_to_half_bits(f)); }
inline float round_to_bf16(float f) { return bf16_bits_to_float(float_to_bf16_bits(f)); }

}  // namespace cuda_emu
