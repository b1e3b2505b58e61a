// The per-ISA dot products of the to_rgb modconv (overview: modconv_rgb.h), compiled once per
// ISA (isa_ns.h): per output pixel, kMaxCo accumulators of the ISA's width run across the
// channels, one load of x per kMaxCo FMAs, and are summed at the end (hsum4); on AVX-512, where
// the channels are whole vectors, four pixels at a time (rgb_quad: the weights loaded once for
// the four, the same sums). Nothing here calls an inline function of another header
// (scripts/check_isa_symbols.py).
#include <cstring>

#include "kernels/cpu/isa_ns.h"
#include "kernels/cpu/isa_vec.h"
#include "kernels/cpu/modconv_rgb.h"

namespace gpen::cpu::modconv_rgb::GPEN_ISA_NS {

namespace {

using namespace gpen::cpu::GPEN_ISA_NS::simd;
typedef float v4 __attribute__((vector_size(4 * sizeof(float))));

#if GPEN_ISA_AVX512
// The first two halvings of hsum4 (below): {c0, c1, c2, c3} with 4 partial lanes each. 16 lanes:
// halves of (c0, c1) and (c2, c3) -> 8 + 8 lanes each; then 4 + 4 per accumulator.
inline vf quarter_sums(vf c0, vf c1, vf c2, vf c3) {
  const vf x0 = __builtin_shufflevector(c0, c1, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
                __builtin_shufflevector(c0, c1, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  const vf x1 = __builtin_shufflevector(c2, c3, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
                __builtin_shufflevector(c2, c3, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  return __builtin_shufflevector(x0, x1, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27) +
         __builtin_shufflevector(x0, x1, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
}
#endif

// The lane sums of four accumulators, {sum c0, sum c1, sum c2, sum c3}. On AVX-512 each step adds
// the two halves of a pair of vectors into one, so the four reduce in four shuffle-add steps with
// no trip through memory (a store and narrower reloads per accumulator stalled on store
// forwarding: to_rgb 1.04-1.24x in bench_cpu_gpen256).
inline v4 hsum4(vf c0, vf c1, vf c2, vf c3) {
#if GPEN_ISA_AVX512
  const vf y = quarter_sums(c0, c1, c2, c3);
  // y: 4 lanes per accumulator; two more halvings.
  typedef float v8 __attribute__((vector_size(8 * sizeof(float))));
  const v8 z = __builtin_shufflevector(y, y, 0, 1, 4, 5, 8, 9, 12, 13) +
               __builtin_shufflevector(y, y, 2, 3, 6, 7, 10, 11, 14, 15);
  return __builtin_shufflevector(z, z, 0, 2, 4, 6) + __builtin_shufflevector(z, z, 1, 3, 5, 7);
#else
  // 8 lanes: each by halving through memory; the shuffles measured no faster here (0.93-1.01x).
  float t[4][L];
  std::memcpy(t[0], &c0, sizeof c0), std::memcpy(t[1], &c1, sizeof c1);
  std::memcpy(t[2], &c2, sizeof c2), std::memcpy(t[3], &c3, sizeof c3);
  v4 r;
  for (int k = 0; k < 4; ++k) {
    v4 lo, hi;
    std::memcpy(&lo, t[k], sizeof lo), std::memcpy(&hi, t[k] + 4, sizeof hi);
    const v4 q = lo + hi;
    r[k] = (q[0] + q[2]) + (q[1] + q[3]);
  }
  return r;
#endif
}

// The noise input's prologue on a vector of channels: act2(x2 * scale + bias2).
inline vf x2_in(vf raw, vf b2, vf scale, vf slope, vf one) {
  const vf v = raw * scale + b2;
  return v * (v < 0.0f ? slope : one);
}

#if GPEN_ISA_AVX512
// hsum4's sums for four pixels at once, {p0: c0..c3, p1: c0..c3, p2, p3} in one vector: each
// accumulator's lanes pair up exactly as in hsum4 (same additions, same bits), but the last two
// halvings are shared by two and then four pixels.
inline vf hsum4x4(const vf (&c)[4][4]) {
  vf y[4];
  for (int p = 0; p < 4; ++p) y[p] = quarter_sums(c[p][0], c[p][1], c[p][2], c[p][3]);
  // hsum4's z of two pixels side by side, then its last halving of all four.
  const vf z01 = __builtin_shufflevector(y[0], y[1], 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29) +
                 __builtin_shufflevector(y[0], y[1], 2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31);
  const vf z23 = __builtin_shufflevector(y[2], y[3], 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29) +
                 __builtin_shufflevector(y[2], y[3], 2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31);
  return __builtin_shufflevector(z01, z23, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30) +
         __builtin_shufflevector(z01, z23, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
}

// Four consecutive pixels of row (n, oy) from ox, where C1 and C2 are whole vectors: each weight
// vector is loaded once for the four, and the finish (demod, bias, activation, residual) runs on
// the sixteen sums in one vector. Every output is the per-pixel loop's to the bit.
inline void rgb_quad(const RgbArgs& a, const float* const* w, const float* xr, const float* x2r, int64_t ox,
                     int64_t n, int64_t oy, const vf& dv16, const vf& bv16) {
  const vf vscale = vf{} + a.x2_scale, vone = vf{} + 1.0f, vslope = vf{} + a.x2_slope;
  vf c[4][4] = {};
  for (int64_t k = 0; k < a.C1; k += L) {
    const vf w0 = vld(w[0] + k), w1 = vld(w[1] + k), w2 = vld(w[2] + k), w3 = vld(w[3] + k);
    for (int p = 0; p < 4; ++p) {
      const vf v = vld(xr + (ox + p) * a.xs2 + k);
      c[p][0] += v * w0, c[p][1] += v * w1, c[p][2] += v * w2, c[p][3] += v * w3;
    }
  }
  if (x2r) {
    for (int64_t k = 0; k < a.C2; k += L) {
      const vf w0 = vld(w[0] + a.C1p + k), w1 = vld(w[1] + a.C1p + k), w2 = vld(w[2] + a.C1p + k),
               w3 = vld(w[3] + a.C1p + k), b2 = vld(a.b2 + k);
      for (int p = 0; p < 4; ++p) {
        const vf v = x2_in(vld(x2r + (ox + p) * a.x2s2 + k), b2, vscale, vslope, vone);
        c[p][0] += v * w0, c[p][1] += v * w1, c[p][2] += v * w2, c[p][3] += v * w3;
      }
    }
  }
  // + 0.0f: the per-pixel loop adds its (empty) scalar channel tail.
  const vf v = (hsum4x4(c) + 0.0f) * dv16 + bv16;
  float t[16], r[16] = {};
  float* yp = a.y + n * a.ys0 + oy * a.ys1 + ox * a.ys2;
  if (a.res) {
    const float* rp = a.res + n * a.rs0 + oy * a.rs1 + ox * a.rs2;
    for (int p = 0; p < 4; ++p)
      for (int64_t o = 0; o < a.Co; ++o) r[p * 4 + o] = rp[p * a.rs2 + o * a.rs3];
  }
  vst(t, v * (v < 0.0f ? vf{} + a.gneg : vf{} + a.gpos) + vld(r));
  for (int p = 0; p < 4; ++p)
    for (int64_t o = 0; o < a.Co; ++o) yp[p * a.ys2 + o * a.ys3] = t[p * 4 + o];
}
#endif

}  // namespace

void rgb_rows(const RgbArgs& a, int64_t n, int64_t r0, int64_t r1) {
  const float* wn = a.wm + n * a.wm_per_sample;
  const float* w0 = wn;
  const float* w1 = wn + a.wstride;
  const float* w2 = wn + 2 * a.wstride;
  const float* w3 = wn + 3 * a.wstride;
  const float* dv = wn + kMaxCo * a.wstride;
  const float* bv = dv + kMaxCo;
  const int64_t C1 = a.C1, C2 = a.C2, C1p = a.C1p;
  const vf vscale = vf{} + a.x2_scale, vone = vf{} + 1.0f, vslope = vf{} + a.x2_slope;
#if GPEN_ISA_AVX512
  const bool quads = C1 % L == 0 && C2 % L == 0;
  const float* const w[4] = {w0, w1, w2, w3};
  vf dv16, bv16;  // d and bias of the four outputs, once per pixel of a quad
  for (int q = 0; q < 16; ++q) dv16[q] = dv[q % 4], bv16[q] = bv[q % 4];
#endif
  for (int64_t oy = r0; oy < r1; ++oy) {
    const float* xr = a.x + n * a.xs0 + oy * a.xs1;
    const float* x2r = a.x2 ? a.x2 + n * a.x2s0 + oy * a.x2s1 : nullptr;
    int64_t ox = 0;
#if GPEN_ISA_AVX512
    if (quads)
      for (; ox + 4 <= a.W; ox += 4) rgb_quad(a, w, xr, x2r, ox, n, oy, dv16, bv16);
#endif
    for (; ox < a.W; ++ox) {
      const float* xp = xr + ox * a.xs2;
      vf c0 = {}, c1 = {}, c2 = {}, c3 = {};
      int64_t c = 0;
      for (; c + L <= C1; c += L) {
        const vf v = vld(xp + c);
        c0 += v * vld(w0 + c), c1 += v * vld(w1 + c), c2 += v * vld(w2 + c), c3 += v * vld(w3 + c);
      }
      float t0 = 0.0f, t1 = 0.0f, t2 = 0.0f, t3 = 0.0f;
      for (; c < C1; ++c) {
        const float v = xp[c];
        t0 += v * w0[c], t1 += v * w1[c], t2 += v * w2[c], t3 += v * w3[c];
      }
      if (x2r) {
        const float* x2p = x2r + ox * a.x2s2;
        const float* u0 = w0 + C1p;
        const float* u1 = w1 + C1p;
        const float* u2 = w2 + C1p;
        const float* u3 = w3 + C1p;
        c = 0;
        for (; c + L <= C2; c += L) {
          const vf v = x2_in(vld(x2p + c), vld(a.b2 + c), vscale, vslope, vone);
          c0 += v * vld(u0 + c), c1 += v * vld(u1 + c), c2 += v * vld(u2 + c), c3 += v * vld(u3 + c);
        }
        for (; c < C2; ++c) {
          float v = x2p[c] * a.x2_scale + a.b2[c];
          v *= v < 0.0f ? a.x2_slope : 1.0f;
          t0 += v * u0[c], t1 += v * u1[c], t2 += v * u2[c], t3 += v * u3[c];
        }
      }
      const v4 sums = hsum4(c0, c1, c2, c3);
      const float acc[kMaxCo] = {sums[0] + t0, sums[1] + t1, sums[2] + t2, sums[3] + t3};
      float* yp = a.y + n * a.ys0 + oy * a.ys1 + ox * a.ys2;
      const float* rp = a.res ? a.res + n * a.rs0 + oy * a.rs1 + ox * a.rs2 : nullptr;
      for (int64_t o = 0; o < a.Co; ++o) {
        const float v = acc[o] * dv[o] + bv[o];
        yp[o * a.ys3] = v * (v < 0.0f ? a.gneg : a.gpos) + (rp ? rp[o * a.rs3] : 0.0f);
      }
    }
  }
}

}  // namespace gpen::cpu::modconv_rgb::GPEN_ISA_NS
