// The per-ISA sweeps of GroupNorm (overview: norm_isa.h). The statistics keep each channel's sums
// in registers over a whole sweep of the positions (blocks of four double vectors of channels);
// the normalisation converts to double and back as norm.cpp's scalar form did and applies SiLU
// with exp_simd.h's formula, spelt out here on the ISA's vectors (nothing here calls an inline
// function of another header but the per-ISA ones of isa_vec.h: scripts/check_isa_symbols.py).
#include <cstring>

#include "kernels/cpu/isa_ns.h"
#include "kernels/cpu/isa_vec.h"
#include "kernels/cpu/norm_isa.h"

namespace gpen::cpu::detail::GPEN_ISA_NS {

namespace {

using namespace gpen::cpu::GPEN_ISA_NS::simd;

constexpr int H2 = L / 2;  // doubles per vector
typedef float vfh __attribute__((vector_size(H2 * sizeof(float))));
typedef double vd __attribute__((vector_size(H2 * sizeof(double))));
typedef int32_t vi __attribute__((vector_size(L * sizeof(int32_t))));

inline vd vdld(const double* p) {
  vd v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline vd widen(const float* p) {
  vfh h;
  std::memcpy(&h, p, sizeof h);
  return __builtin_convertvector(h, vd);
}

// Two half vectors as one, in registers (a copy through memory would stall the load on the two
// narrower stores).
inline vf join(vfh lo, vfh hi) {
#if GPEN_ISA_AVX512
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
#else
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
#endif
}

// exp_simd.h's exp and SiLU, lane by lane (T: float or vf; the same operations in the same order).
inline int32_t to_int(float n) { return static_cast<int32_t>(n); }
inline vi to_int(vf n) { return __builtin_convertvector(n, vi); }
inline float from_bits(int32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
inline vf from_bits(vi b) {
  vf f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
template <class T>
inline T exp_lanes(T x) {
  T n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  n = n < -126.0f ? T{} - 126.0f : n;
  n = n > 127.0f ? T{} + 127.0f : n;
  T r = x - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  r = r < -0.35f ? T{} - 0.35f : r;
  r = r > 0.35f ? T{} + 0.35f : r;
  T p = T{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const T e = p * (r * r) + r + 1.0f;
  return e * from_bits((to_int(n) + 127) << 23);
}
template <class T>
inline T silu_lanes(T x) {
  return x / (1.0f + exp_lanes(-x));
}

// Channels [c, c + 4 H2) of the slice over every position, sums in registers.
void sums_block(const GnSlice& s, int64_t c, const double* shift, double* s1, double* s2) {
  vd a[4] = {}, b[4] = {}, sh[4];
  for (int j = 0; j < 4; ++j) sh[j] = vdld(shift + c + j * H2);
  for (int64_t h = 0; h < s.H; ++h) {
    const float* row = s.x + h * s.hs + c;
    for (int64_t w = 0; w < s.W; ++w) {
      const float* xp = row + w * s.ws;
      for (int j = 0; j < 4; ++j) {
        const vd d = widen(xp + j * H2) - sh[j];
        a[j] += d;
        b[j] += d * d;
      }
    }
  }
  for (int j = 0; j < 4; ++j) {
    std::memcpy(s1 + c + j * H2, &a[j], sizeof(vd));
    std::memcpy(s2 + c + j * H2, &b[j], sizeof(vd));
  }
}

}  // namespace

void gn_sums(const GnSlice& s, double* shift, double* s1, double* s2) {
  for (int64_t i = 0; i < s.k; ++i) {
    shift[i] = static_cast<double>(s.x[i]);
    s1[i] = s2[i] = 0.0;
  }
  int64_t c = 0;
  for (; c + 4 * H2 <= s.k; c += 4 * H2) sums_block(s, c, shift, s1, s2);
  if (c == s.k) return;
  for (int64_t h = 0; h < s.H; ++h)
    for (int64_t w = 0; w < s.W; ++w) {
      const float* xp = s.x + h * s.hs + w * s.ws;
      for (int64_t i = c; i < s.k; ++i) {
        const double d = static_cast<double>(xp[i]) - shift[i];
        s1[i] += d;
        s2[i] += d * d;
      }
    }
}

namespace {

template <bool kSilu>
void apply_row(float* y, int64_t ys, const float* x, int64_t xs, int64_t n, int64_t k, const double* centre,
               const double* scale, const float* mul, const float* add) {
  for (int64_t p = 0; p < n; ++p) {
    const float* xp = x + p * xs;
    float* yp = y + p * ys;
    int64_t i = 0;
    for (; i + L <= k; i += L) {
      const vfh lo = __builtin_convertvector((widen(xp + i) - vdld(centre + i)) * vdld(scale + i), vfh);
      const vfh hi = __builtin_convertvector((widen(xp + i + H2) - vdld(centre + i + H2)) * vdld(scale + i + H2), vfh);
      vf v = vfmadd(join(lo, hi), vld(mul + i), vld(add + i));
      if constexpr (kSilu) v = silu_lanes(v);
      vst(yp + i, v);
    }
    for (; i < k; ++i) {
      float v = __builtin_fmaf(static_cast<float>((static_cast<double>(xp[i]) - centre[i]) * scale[i]), mul[i], add[i]);
      if constexpr (kSilu) v = silu_lanes(v);
      yp[i] = v;
    }
  }
}

}  // namespace

void gn_apply_row(float* y, int64_t ys, const float* x, int64_t xs, int64_t n, int64_t k, const double* centre,
                  const double* scale, const float* mul, const float* add, bool silu) {
  if (silu)
    apply_row<true>(y, ys, x, xs, n, k, centre, scale, mul, add);
  else
    apply_row<false>(y, ys, x, xs, n, k, centre, scale, mul, add);
}

}  // namespace gpen::cpu::detail::GPEN_ISA_NS
