#pragma once
// expf and SiLU written so that a `#pragma omp simd` loop calling them vectorises: no branches,
// no library call. std::exp is a scalar call per element, which made SiLU the larger part of
// GroupNorm + swish on VQGAN's 512 x 512 maps.
#include <bit>
#include <cstdint>

namespace gpen::cpu {

// exp(x) within about 1 ulp of std::exp on [-87, 88]; beyond, about 2^-126 * exp(-0.35) below and
// 2^127 * exp(0.35) (about 2.4e38, finite) above. x = n ln2 + r, |r| <= ln2 / 2 (ln2 in two
// parts so n ln2 is exact), n rounded by adding 1.5 * 2^23, exp(r) by Cephes' minimax polynomial,
// 2^n built in the exponent bits. Its callers' files are compiled with -fno-trapping-math
// (CMakeLists.txt), without which GCC keeps the clamps as branches and the loops scalar.
inline float exp_simd(float x) {
  float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  n = n < -126.0f ? -126.0f : n;
  n = n > 127.0f ? 127.0f : n;
  float r = x - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  r = r < -0.35f ? -0.35f : r;
  r = r > 0.35f ? 0.35f : r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * (r * r) + r + 1.0f;
  return e * std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
}

// x * sigmoid(x), as torch's SiLU / VQGAN's swish.
inline float silu_simd(float x) { return x / (1.0f + exp_simd(-x)); }

}  // namespace gpen::cpu
