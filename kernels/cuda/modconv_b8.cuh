#pragma once
// Internal to modconv.cuh: the B stager's load for 8-bit weights (weights8.cuh), one depth step
// of ModConvBStage: each code and its channel's scale, dequantised and rounded to T. kVec (Cout a
// multiple of kV, codes and scales 16-byte aligned: the host checks) does one load of kV codes and
// one of kV scales per chunk; kept out of the stager's own loop so that the float path's code
// (and its registers) stay as they were.
#include <cstdint>

#include "kernels/cuda/weights8.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

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
    const int tap = k / g.c, ci = k - tap * g.c;
    const int ty = tap / ph.ntx, tx = tap - ty * ph.ntx;
    const int ky = ph.ky0 + g.kstep * ty, kx = ph.kx0 + g.kstep * tx;
    const int64_t wi = (int64_t{ky * g.k + kx} * g.c + ci) * g.cout + co;
    if constexpr (kVec) {
      const Codes c = *reinterpret_cast<const Codes*>(t.w8.codes + wi);
      const Scales sc = *reinterpret_cast<const Scales*>(t.w8.scale + co);
      for (int j = 0; j < kV; ++j) raw[i].v[j] = from_f32<T>(q8_dequant(c.b[j], t.w8.fp8, sc.s[j]));
    } else {
      for (int j = 0; j < kV; ++j) raw[i].v[j] = co + j < g.cout ? from_f32<T>(weight8_at(t.w8, wi + j, co + j)) : zero;
    }
  }
}

GPEN_CUDA_NAMESPACE_END
