// The per-ISA register tiles of conv2d's direct path (overview: conv2d_direct.cpp, conv2d_isa.h).
// A tile is NP output pixels x NV vectors of L output channels; the AVX2 copy runs L = 8, the
// AVX-512 copy L = 16 (and L = 8 for a last block of 8 channels, Cp being a multiple of 8 only),
// with twice the registers for more pixels or channels per tile. Each output element still sums
// its depth in the same order with one FMA per term, and is finished (bias, activation, residual)
// the same way, so both copies give the same bits. Nothing here calls an inline function of
// another header (scripts/check_isa_symbols.py).
#include <cstring>

#include "kernels/cpu/conv2d_isa.h"
#include "kernels/cpu/isa_ns.h"
#include "kernels/cpu/isa_vec.h"

namespace gpen::cpu::detail::GPEN_ISA_NS {

namespace {

using gpen::cpu::GPEN_ISA_NS::simd::imax;
using gpen::cpu::GPEN_ISA_NS::simd::imin;
using gpen::cpu::GPEN_ISA_NS::simd::Vec;
using gpen::cpu::GPEN_ISA_NS::simd::vld;
using gpen::cpu::GPEN_ISA_NS::simd::vst;
inline int clamp_tap(int64_t v, int k) { return static_cast<int>(v < 0 ? 0 : v > k ? k : v); }

// act(acc + bias) + residual for channels [c, c + nc) (nc <= L) of pixel (n, oy, ox): finish8's
// arithmetic (conv2d_paths.h) on L lanes.
template <int L>
inline void finish(const ConvOut& o, typename Vec<L>::type acc, bool has_bias, typename Vec<L>::type b, int64_t n,
                   int64_t oy, int64_t ox, int64_t c, int nc) {
  typedef typename Vec<L>::type vf;
  if (has_bias) acc += b;
  const vf zero = {};
  const vf pos = acc < zero ? zero : acc;
  const vf neg = zero < acc ? zero : acc;
  acc = (vf{} + o.gain) * (pos + (vf{} + o.slope) * neg);
  float* yp = o.y + n * o.ys0 + oy * o.ys1 + ox * o.ys2 + c * o.ys3;
  const float* rp = o.res ? o.res + n * o.rs0 + oy * o.rs1 + ox * o.rs2 + c * o.rs3 : nullptr;
  if (nc == L && o.ys3 == 1 && (!rp || o.rs3 == 1)) {
    if (rp) acc += vld<L>(rp);  // read before the store: the residual may be the output
    vst<L>(yp, acc);
    return;
  }
  float t[L];
  vst<L>(t, acc);
  for (int j = 0; j < nc; ++j) yp[j * o.ys3] = rp ? t[j] + rp[j * o.rs3] : t[j];
}

// NP consecutive output pixels of row (n, oy) from ox0, output channels [c, c + L NV); taps ky in
// [ky0, ky1), kx in [kx0, kx1), which lie inside the input for every one of the pixels.
template <int L, int NP, int NV, bool kContig>
__attribute__((always_inline)) inline void tile(const Dc& d, int64_t n, int64_t oy, int64_t ox0, int64_t c, int ky0,
                                                int ky1, int kx0, int kx1) {
  typedef typename Vec<L>::type vf;
  vf acc[NP][NV];
#pragma GCC unroll 8
  for (int p = 0; p < NP; ++p)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[p][v] = vf{};
  // Element offset of tap (0, 0) of pixel ox0; it may be negative (padding), the taps read are not.
  const int64_t base = n * d.xs0 + (oy * d.sh - d.pt) * d.xs1 + (ox0 * d.sw - d.pl) * d.xs2;
  const int64_t ps = d.sw * d.xs2;
  const int64_t Cp = d.Cp;
#pragma GCC unroll 8
  for (int ky = ky0; ky < ky1; ++ky) {
    if constexpr (kContig) {
      const float* xp = d.x + (base + ky * d.xs1 + kx0 * d.Cin);
      const float* wr = d.wp + ((ky * d.kw + kx0) * d.Cin) * Cp + c;
      const int64_t len = (kx1 - kx0) * d.Cin;
      for (int64_t j = 0; j < len; ++j, wr += Cp) {
        vf wv[NV];
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) wv[v] = vld<L>(wr + L * v);
#pragma GCC unroll 16
        for (int p = 0; p < NP; ++p) {
          const vf xv = vf{} + xp[p * ps + j];
#pragma GCC unroll 8
          for (int v = 0; v < NV; ++v) acc[p][v] += xv * wv[v];
        }
      }
    } else {
#pragma GCC unroll 8
      for (int kx = kx0; kx < kx1; ++kx) {
        const float* xp = d.x + (base + ky * d.xs1 + kx * d.xs2);
        const float* wr = d.wp + ((ky * d.kw + kx) * d.Cin) * Cp + c;
        for (int64_t ci = 0; ci < d.Cin; ++ci, wr += Cp) {
          vf wv[NV];
#pragma GCC unroll 8
          for (int v = 0; v < NV; ++v) wv[v] = vld<L>(wr + L * v);
#pragma GCC unroll 16
          for (int p = 0; p < NP; ++p) {
            const vf xv = vf{} + xp[p * ps + ci * d.xcs];
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) acc[p][v] += xv * wv[v];
          }
        }
      }
    }
  }
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) {
    const int64_t cv = c + L * v;
    const vf b = d.bp ? vld<L>(d.bp + cv) : vf{};
    const int nc = static_cast<int>(imin(L, d.Co - cv));
#pragma GCC unroll 16
    for (int p = 0; p < NP; ++p) finish<L>(d.o, acc[p][v], d.bp != nullptr, b, n, oy, ox0 + p, cv, nc);
  }
}

// Output channels [c, c + L NV) of row (n, oy); NP pixels per interior tile.
template <int L, int NV, int NP, bool kContig>
void block(const Dc& d, int64_t n, int64_t oy, int64_t c, int64_t lo, int64_t hi) {
  const int64_t iy0 = oy * d.sh - d.pt;
  const int ky0 = clamp_tap(-iy0, d.kh), ky1 = clamp_tap(d.H - iy0, d.kh);
  auto border = [&](int64_t ox) {
    const int64_t ix0 = ox * d.sw - d.pl;
    tile<L, 1, NV, kContig>(d, n, oy, ox, c, ky0, ky1, clamp_tap(-ix0, d.kw), clamp_tap(d.W - ix0, d.kw));
  };
  for (int64_t ox = 0; ox < lo; ++ox) border(ox);
  int64_t ox = lo;
  for (; ox + NP <= hi; ox += NP) tile<L, NP, NV, kContig>(d, n, oy, ox, c, ky0, ky1, 0, d.kw);
  for (; ox < hi; ++ox) tile<L, 1, NV, kContig>(d, n, oy, ox, c, ky0, ky1, 0, d.kw);
  for (ox = hi; ox < d.Wo; ++ox) border(ox);
}

template <bool kContig>
void row(const Dc& d, int64_t n, int64_t oy) {
  // Interior columns: every kx tap inside the row.
  const int64_t lo = imin((d.pl + d.sw - 1) / d.sw, d.Wo);
  int64_t hi = d.W - d.kw + d.pl >= 0 ? imin((d.W - d.kw + d.pl) / d.sw + 1, d.Wo) : 0;
  hi = imax(hi, lo);
  int64_t c = 0;
#if GPEN_ISA_AVX512
  // 32 registers: 6 x 4 accumulators (the 64-channel stems), 8 x 2, 8 x 1, plus weights and a
  // broadcast; a last block of 8 channels on 8 lanes.
  for (; c + 64 <= d.Cp; c += 64) block<16, 4, 6, kContig>(d, n, oy, c, lo, hi);
  for (; c + 32 <= d.Cp; c += 32) block<16, 2, 8, kContig>(d, n, oy, c, lo, hi);
  for (; c + 16 <= d.Cp; c += 16) block<16, 1, 8, kContig>(d, n, oy, c, lo, hi);
  if (c < d.Cp) block<8, 1, 8, kContig>(d, n, oy, c, lo, hi);
#else
  // 16 registers: the NP x NV accumulators, NV weights and a broadcast.
  for (; c + 16 <= d.Cp; c += 16) block<8, 2, 6, kContig>(d, n, oy, c, lo, hi);
  if (c < d.Cp) block<8, 1, 8, kContig>(d, n, oy, c, lo, hi);
#endif
}

}  // namespace

void direct_row(const Dc& d, bool contig, int64_t n, int64_t oy) {
  if (contig) {
    row<true>(d, n, oy);
  } else {
    row<false>(d, n, oy);
  }
}

}  // namespace gpen::cpu::detail::GPEN_ISA_NS
