#pragma once
// Internal to modconv.cuh: the B tile's index walk (both stagers) and the B stager's load for
// 8-bit weights (weights8.cuh), one depth step of ModConvBStage: each code and its scale (per
// channel or per channel and group of reduction rows), dequantised and rounded to T. kVec (Cout a
// multiple of kV, codes and scales 16-byte aligned: the host checks; a scale row is Cout floats)
// does one load of kV codes and one of kV scales per chunk; kept out of the stager's own loop so
// that the float path's code (and its registers) stay as they were.
#include <cstdint>

#include "kernels/cuda/weights8.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

// The B tile's index walk, shared by the float and the 8-bit stagers: GEMM depth row k of phase
// ph -> its tap t = k / C and input channel ci -> the phase's tap (ty, tx) -> the weight tap
// (ky, kx). Returns the HWIO element of output channel co; krow is its reduction row (ky * K + kx)
// * C + ci, which picks the scale group of an 8-bit weight.
template <class G, class Phase>
__device__ __forceinline__ int64_t modconv_b_index(const G& g, const Phase& ph, int k, int co, int& krow) {
  const int tap = k / g.c, ci = k - tap * g.c;
  const int ty = tap / ph.ntx, tx = tap - ty * ph.ntx;
  const int ky = ph.ky0 + g.kstep * ty, kx = ph.kx0 + g.kstep * tx;
  krow = (ky * g.k + kx) * g.c + ci;
  return int64_t{krow} * g.cout + co;
}

template <class T, int kRows, int kRowStep, bool kVec, class G, class Tensors, class Phase, class Raw>
__device__ __forceinline__ void modconv_load_b8(const G& g, const Tensors& t, const Phase& ph, int k0, int n0, int row,
                                                int col, Raw (&raw)[kRows]) {
  constexpr int kV = Raw::n;  // Vec16<T>: T values per 16 bytes
  struct alignas(kV) Codes {
    uint8_t b[kV];
  };
  struct alignas(16) Scales {
    float s[kV];
  };
  const T zero = from_f32<T>(0.0f);
  const int co = n0 + col;
  for (int i = 0; i < kRows; ++i) {
    const int k = k0 + row + i * kRowStep;
    if (k >= ph.depth || co >= g.cout) {
      for (int j = 0; j < kV; ++j) raw[i].v[j] = zero;
      continue;
    }
    int krow = 0;
    const int64_t wi = modconv_b_index(g, ph, k, co, krow);
    const float* scales = weight8_scales(t.w8, krow);
    if constexpr (kVec) {
      const Codes c = *reinterpret_cast<const Codes*>(t.w8.codes + wi);
      const Scales sc = *reinterpret_cast<const Scales*>(scales + co);  // a scale row is cout floats: aligned
      for (int j = 0; j < kV; ++j) raw[i].v[j] = from_f32<T>(q8_dequant(c.b[j], t.w8.fp8, sc.s[j]));
    } else {
      for (int j = 0; j < kV; ++j)
        raw[i].v[j] = co + j < g.cout ? from_f32<T>(q8_dequant(t.w8.codes[wi + j], t.w8.fp8, scales[co + j])) : zero;
    }
  }
}

GPEN_CUDA_NAMESPACE_END
