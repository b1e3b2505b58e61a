// The per-ISA rows of conv2d's depthwise 3x3 path (overview: conv2d_depthwise.cpp, conv2d_isa.h):
// tiles of NP pixels x NB vectors of L channels, L = 8 on the AVX2 copy and 16 on the AVX-512
// copy (which runs a last block of 8 channels on 8 lanes). Every output element sums its taps in
// the same order with one FMA per tap and is finished the same way on both copies: the same
// bits. Nothing here calls an inline function of another header (scripts/check_isa_symbols.py).
#include <cstring>

#include "kernels/cpu/conv2d_isa.h"
#include "kernels/cpu/isa_ns.h"
#include "kernels/cpu/isa_vec.h"

namespace gpen::cpu::detail::GPEN_ISA_NS {

namespace {

#if GPEN_ISA_AVX512
constexpr int kL = 16;
#else
constexpr int kL = 8;
#endif

using gpen::cpu::GPEN_ISA_NS::simd::imax;
using gpen::cpu::GPEN_ISA_NS::simd::imin;
using gpen::cpu::GPEN_ISA_NS::simd::Vec;
using gpen::cpu::GPEN_ISA_NS::simd::vld;
using gpen::cpu::GPEN_ISA_NS::simd::vst;
inline int tap_lo(int64_t v) { return static_cast<int>(v < 0 ? 0 : v > 3 ? 3 : v); }

// finish8 (conv2d_paths.h) on L lanes, all of them stored.
template <int L>
inline void finish(const ConvOut& o, typename Vec<L>::type acc, bool has_bias, typename Vec<L>::type b, int64_t n,
                   int64_t oy, int64_t ox, int64_t c) {
  typedef typename Vec<L>::type vf;
  if (has_bias) acc += b;
  const vf zero = {};
  const vf pos = acc < zero ? zero : acc;
  const vf neg = zero < acc ? zero : acc;
  acc = (vf{} + o.gain) * (pos + (vf{} + o.slope) * neg);
  float* yp = o.y + n * o.ys0 + oy * o.ys1 + ox * o.ys2 + c * o.ys3;
  const float* rp = o.res ? o.res + n * o.rs0 + oy * o.rs1 + ox * o.rs2 + c * o.rs3 : nullptr;
  if (o.ys3 == 1 && (!rp || o.rs3 == 1)) {
    if (rp) acc += vld<L>(rp);  // read before the store: the residual may be the output
    vst<L>(yp, acc);
    return;
  }
  float t[L];
  vst<L>(t, acc);
  for (int j = 0; j < L; ++j) yp[j * o.ys3] = rp ? t[j] + rp[j * o.rs3] : t[j];
}

// NP consecutive output pixels of row (n, oy) from ox0, channels [c, c + L NB), taps ky in
// [ky0, ky1) and kx in [kx0, kx1), which must lie inside the input for every one of the pixels.
template <int L, int NP, int NB>
__attribute__((always_inline)) inline void tile(const Dw& d, int64_t n, int64_t oy, int64_t ox0, int64_t c, int ky0,
                                                int ky1, int kx0, int kx1) {
  typedef typename Vec<L>::type vf;
  vf acc[NP][NB];
#pragma GCC unroll 8
  for (int p = 0; p < NP; ++p)
#pragma GCC unroll 8
    for (int b = 0; b < NB; ++b) acc[p][b] = vf{};
  // Element offset of tap (0, 0) of pixel ox0; it may be negative (padding), the taps read are not.
  const int64_t base = n * d.xs0 + (oy * d.sh - d.pt) * d.xs1 + (ox0 * d.sw - d.pl) * d.xs2 + c;
  const int64_t ps = d.sw * d.xs2;
#pragma GCC unroll 8
  for (int ky = ky0; ky < ky1; ++ky)
#pragma GCC unroll 8
    for (int kx = kx0; kx < kx1; ++kx) {
      const float* xp = d.x + (base + ky * d.xs1 + kx * d.xs2);
      const float* wp = d.w + ky * d.ws0 + kx * d.ws1 + c;
#pragma GCC unroll 8
      for (int b = 0; b < NB; ++b) {
        const vf wv = vld<L>(wp + L * b);
#pragma GCC unroll 8
        for (int p = 0; p < NP; ++p) acc[p][b] += vld<L>(xp + p * ps + L * b) * wv;
      }
    }
#pragma GCC unroll 8
  for (int b = 0; b < NB; ++b) {
    const int64_t cb = c + L * b;
    vf bv{};
    if (d.bias) {
      if (d.bs == 1) {
        bv = vld<L>(d.bias + cb);
      } else {
        for (int j = 0; j < L; ++j) bv[j] = d.bias[(cb + j) * d.bs];
      }
    }
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) finish<L>(d.o, acc[p][b], d.bias != nullptr, bv, n, oy, ox0 + p, cb);
  }
}

// All channel blocks of NP pixels from ox0 (c8: the channels, rounded down to 8): NB vectors at
// a time, then 2, then 1, then (AVX-512) a last 8.
template <int NP, int NB>
__attribute__((always_inline)) inline void pixels(const Dw& d, int64_t n, int64_t oy, int64_t ox0, int64_t c8,
                                                  int ky0, int ky1, int kx0, int kx1) {
  int64_t c = 0;
  for (; c + kL * NB <= c8; c += kL * NB) tile<kL, NP, NB>(d, n, oy, ox0, c, ky0, ky1, kx0, kx1);
  if constexpr (NB > 2) {
    for (; c + 2 * kL <= c8; c += 2 * kL) tile<kL, NP, 2>(d, n, oy, ox0, c, ky0, ky1, kx0, kx1);
  }
  for (; c + kL <= c8; c += kL) tile<kL, NP, 1>(d, n, oy, ox0, c, ky0, ky1, kx0, kx1);
  if constexpr (kL > 8) {
    if (c < c8) tile<8, NP, 1>(d, n, oy, ox0, c, ky0, ky1, kx0, kx1);
  }
}

// Channels [c0, C) (fewer than 8) of row (n, oy), one scalar at a time, taps in the same order.
void tail(const Dw& d, int64_t n, int64_t oy, int64_t c0) {
  const int64_t iy0 = oy * d.sh - d.pt;
  for (int64_t ox = 0; ox < d.Wo; ++ox) {
    const int64_t ix0 = ox * d.sw - d.pl;
    float* yp = d.o.y + n * d.o.ys0 + oy * d.o.ys1 + ox * d.o.ys2;
    const float* rp = d.o.res ? d.o.res + n * d.o.rs0 + oy * d.o.rs1 + ox * d.o.rs2 : nullptr;
    for (int64_t c = c0; c < d.C; ++c) {
      float acc = 0.0f;
      for (int ky = 0; ky < 3; ++ky) {
        const int64_t iy = iy0 + ky;
        if (iy < 0 || iy >= d.H) continue;
        for (int kx = 0; kx < 3; ++kx) {
          const int64_t ix = ix0 + kx;
          if (ix < 0 || ix >= d.W) continue;
          acc += d.x[n * d.xs0 + iy * d.xs1 + ix * d.xs2 + c] * d.w[ky * d.ws0 + kx * d.ws1 + c];
        }
      }
      if (d.bias) acc += d.bias[c * d.bs];
      // act_branchless (strided.h), spelt out.
      const float pos = acc < 0.0f ? 0.0f : acc, neg = 0.0f < acc ? 0.0f : acc;
      float v = d.o.gain * (pos + d.o.slope * neg);
      if (rp) v += rp[c * d.o.rs3];
      yp[c * d.o.ys3] = v;
    }
  }
}

// Row (n, oy) in tiles of NP pixels x NB vectors of channels.
template <int NP, int NB>
void row(const Dw& d, int64_t n, int64_t oy) {
  const int64_t iy0 = oy * d.sh - d.pt;
  const int ky0 = tap_lo(-iy0), ky1 = tap_lo(d.H - iy0);
  // Interior columns: every tap inside the row, i.e. ox * sw - pl >= 0 and ox * sw - pl + 2 < W.
  const int64_t lo = imin((d.pl + d.sw - 1) / d.sw, d.Wo);
  int64_t hi = d.W - 3 + d.pl >= 0 ? imin((d.W - 3 + d.pl) / d.sw + 1, d.Wo) : 0;
  hi = imax(hi, lo);
  const int64_t c8 = d.C / 8 * 8;
  if (c8 > 0) {
    auto border = [&](int64_t ox) {
      const int64_t ix0 = ox * d.sw - d.pl;
      pixels<1, NB>(d, n, oy, ox, c8, ky0, ky1, tap_lo(-ix0), tap_lo(d.W - ix0));
    };
    for (int64_t ox = 0; ox < lo; ++ox) border(ox);
    int64_t ox = lo;
    if (ky0 == 0 && ky1 == 3) {  // constant tap ranges: the nine taps unroll
      for (; ox + NP <= hi; ox += NP) pixels<NP, NB>(d, n, oy, ox, c8, 0, 3, 0, 3);
      for (; ox < hi; ++ox) pixels<1, NB>(d, n, oy, ox, c8, 0, 3, 0, 3);
    } else {
      for (; ox + NP <= hi; ox += NP) pixels<NP, NB>(d, n, oy, ox, c8, ky0, ky1, 0, 3);
      for (; ox < hi; ++ox) pixels<1, NB>(d, n, oy, ox, c8, ky0, ky1, 0, 3);
    }
    for (ox = hi; ox < d.Wo; ++ox) border(ox);
  }
  if (c8 < d.C) tail(d, n, oy, c8);
}

}  // namespace

void depthwise3x3_row(const Dw& d, bool wide, int64_t n, int64_t oy) {
  if (wide) {
    row<1, 4>(d, n, oy);
  } else {
    row<4, 2>(d, n, oy);
  }
}

}  // namespace gpen::cpu::detail::GPEN_ISA_NS
