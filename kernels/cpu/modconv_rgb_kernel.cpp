// The per-ISA dot products of the to_rgb modconv (overview: modconv_rgb.h), compiled once per
// ISA (isa_ns.h): per output pixel, kMaxCo accumulators of the ISA's width run across the
// channels, one load of x per kMaxCo FMAs, and are summed by halving at the end. Nothing here
// calls an inline function of another header (scripts/check_isa_symbols.py).
#include <cstring>

#include "kernels/cpu/isa_ns.h"
#include "kernels/cpu/isa_vec.h"
#include "kernels/cpu/modconv_rgb.h"

namespace gpen::cpu::modconv_rgb::GPEN_ISA_NS {

namespace {

using namespace gpen::cpu::GPEN_ISA_NS::simd;
typedef float v4 __attribute__((vector_size(4 * sizeof(float))));

// Sum of the lanes by halving (log2 L dependent adds, not L).
inline float hsum(vf v) {
  float t[L];
  std::memcpy(t, &v, sizeof t);
  v4 s;
  std::memcpy(&s, t, sizeof s);
  for (int i = 4; i < L; i += 4) {
    v4 u;
    std::memcpy(&u, t + i, sizeof u);
    s += u;
  }
  return (s[0] + s[2]) + (s[1] + s[3]);
}

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
  for (int64_t oy = r0; oy < r1; ++oy) {
    const float* xr = a.x + n * a.xs0 + oy * a.xs1;
    const float* x2r = a.x2 ? a.x2 + n * a.x2s0 + oy * a.x2s1 : nullptr;
    for (int64_t ox = 0; ox < a.W; ++ox) {
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
          vf v = vld(x2p + c) * vscale + vld(a.b2 + c);
          v *= v < 0.0f ? vslope : vone;
          c0 += v * vld(u0 + c), c1 += v * vld(u1 + c), c2 += v * vld(u2 + c), c3 += v * vld(u3 + c);
        }
        for (; c < C2; ++c) {
          float v = x2p[c] * a.x2_scale + a.b2[c];
          v *= v < 0.0f ? a.x2_slope : 1.0f;
          t0 += v * u0[c], t1 += v * u1[c], t2 += v * u2[c], t3 += v * u3[c];
        }
      }
      const float acc[kMaxCo] = {hsum(c0) + t0, hsum(c1) + t1, hsum(c2) + t2, hsum(c3) + t3};
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
