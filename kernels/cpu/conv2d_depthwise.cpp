// Depthwise 3x3 conv (MobileNet's), NHWC: vectorised across channels, which are contiguous.
//
// A tile of output pixels of one row runs through all channels, a few vectors of 8 at a time: per
// tap, each weight vector loaded (from L1: 9 x C floats) serves every pixel of the tile, and the
// tile's input pixels are mostly reused by the next tile while still in L1. (Sweeping a whole
// row per channel block instead, weights held in registers, was slower from 64 channels on: the
// three input rows no longer fit in L1.) Tiles in the interior
// of the row (and in rows whose three input rows all exist) run with constant tap ranges, so the
// compiler unrolls the nine taps with no bounds checks; border pixels and rows run the same code
// with their valid tap ranges (padding taps are skipped, as the generic path skips them, so the
// sums are the same). The epilogue (bias, activation, residual) is applied in registers before
// the one store. Rows are spread over the OpenMP threads dynamically: the machine is shared, and
// a thread that is descheduled must not hold the others at the barrier.
#include <omp.h>

#include <algorithm>

#include "kernels/cpu/conv2d_paths.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/strided.h"

namespace gpen::cpu::detail {

namespace {

struct Dw {
  const float* x = nullptr;
  int64_t xs0 = 0, xs1 = 0, xs2 = 0;
  const float* w = nullptr;
  int64_t ws0 = 0, ws1 = 0;
  const float* bias = nullptr;
  int64_t bs = 0;
  ConvOut o;
  int64_t H = 0, W = 0, C = 0, Ho = 0, Wo = 0;
  int sh = 1, sw = 1, pt = 0, pl = 0;
};

// NP consecutive output pixels of row (n, oy) from ox0, channels [c, c + 8 NB), taps ky in
// [ky0, ky1) and kx in [kx0, kx1), which must lie inside the input for every one of the pixels.
// Each weight vector loaded serves NP pixels; NP x NB independent accumulators hide the FMA
// latency.
template <int NP, int NB>
__attribute__((always_inline)) inline void dw_tile(const Dw& d, int64_t n, int64_t oy, int64_t ox0, int64_t c, int ky0,
                                                   int ky1, int kx0, int kx1) {
  v8f acc[NP][NB];
#pragma GCC unroll 8
  for (int p = 0; p < NP; ++p)
#pragma GCC unroll 8
    for (int b = 0; b < NB; ++b) acc[p][b] = v8f{};
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
        const v8f wv = load8(wp + 8 * b);
#pragma GCC unroll 8
        for (int p = 0; p < NP; ++p) acc[p][b] += load8(xp + p * ps + 8 * b) * wv;
      }
    }
#pragma GCC unroll 8
  for (int b = 0; b < NB; ++b) {
    const int64_t cb = c + 8 * b;
    v8f b8{};
    if (d.bias) {
      if (d.bs == 1) {
        b8 = load8(d.bias + cb);
      } else {
        for (int j = 0; j < 8; ++j) b8[j] = d.bias[(cb + j) * d.bs];
      }
    }
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) finish8(d.o, acc[p][b], d.bias != nullptr, b8, n, oy, ox0 + p, cb, 8);
  }
}

// All channel blocks of NP pixels from ox0: NB vectors of 8 channels at a time, then fewer.
template <int NP, int NB>
__attribute__((always_inline)) inline void dw_pixels(const Dw& d, int64_t n, int64_t oy, int64_t ox0, int64_t c8,
                                                     int ky0, int ky1, int kx0, int kx1) {
  int64_t c = 0;
  for (; c + 8 * NB <= c8; c += 8 * NB) dw_tile<NP, NB>(d, n, oy, ox0, c, ky0, ky1, kx0, kx1);
  if constexpr (NB > 2) {
    for (; c + 16 <= c8; c += 16) dw_tile<NP, 2>(d, n, oy, ox0, c, ky0, ky1, kx0, kx1);
  }
  for (; c < c8; c += 8) dw_tile<NP, 1>(d, n, oy, ox0, c, ky0, ky1, kx0, kx1);
}

// Channels [c0, C) (fewer than 8) of row (n, oy), one scalar at a time, taps in the same order.
void dw_tail(const Dw& d, int64_t n, int64_t oy, int64_t c0) {
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
      float v = act_branchless(acc, d.o.slope, d.o.gain);
      if (rp) v += rp[c * d.o.rs3];
      yp[c * d.o.ys3] = v;
    }
  }
}

int tap_lo(int64_t pad_minus_pos) { return static_cast<int>(std::clamp<int64_t>(pad_minus_pos, 0, 3)); }

// Row (n, oy) in tiles of NP pixels x NB vectors of 8 channels.
template <int NP, int NB>
void dw_row(const Dw& d, int64_t n, int64_t oy) {
  const int64_t iy0 = oy * d.sh - d.pt;
  const int ky0 = tap_lo(-iy0), ky1 = tap_lo(d.H - iy0);
  // Interior columns: every tap inside the row, i.e. ox * sw - pl >= 0 and ox * sw - pl + 2 < W.
  const int64_t lo = std::min<int64_t>((d.pl + d.sw - 1) / d.sw, d.Wo);
  int64_t hi = d.W - 3 + d.pl >= 0 ? std::min<int64_t>((d.W - 3 + d.pl) / d.sw + 1, d.Wo) : 0;
  hi = std::max(hi, lo);
  const int64_t c8 = d.C / 8 * 8;
  if (c8 > 0) {
    auto border = [&](int64_t ox) {
      const int64_t ix0 = ox * d.sw - d.pl;
      dw_pixels<1, NB>(d, n, oy, ox, c8, ky0, ky1, tap_lo(-ix0), tap_lo(d.W - ix0));
    };
    for (int64_t ox = 0; ox < lo; ++ox) border(ox);
    int64_t ox = lo;
    if (ky0 == 0 && ky1 == 3) {  // constant tap ranges: the nine taps unroll
      for (; ox + NP <= hi; ox += NP) dw_pixels<NP, NB>(d, n, oy, ox, c8, 0, 3, 0, 3);
      for (; ox < hi; ++ox) dw_pixels<1, NB>(d, n, oy, ox, c8, 0, 3, 0, 3);
    } else {
      for (; ox + NP <= hi; ox += NP) dw_pixels<NP, NB>(d, n, oy, ox, c8, ky0, ky1, 0, 3);
      for (; ox < hi; ++ox) dw_pixels<1, NB>(d, n, oy, ox, c8, ky0, ky1, 0, 3);
    }
    for (ox = hi; ox < d.Wo; ++ox) border(ox);
  }
  if (c8 < d.C) dw_tail(d, n, oy, c8);
}

}  // namespace

bool depthwise3x3(const Conv2dParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
                  const TensorView* residual, const TensorView& y) {
  if (p.kh != 3 || p.kw != 3 || x.stride(3) != 1 || w.stride(3) != 1) return false;
  Dw d;
  d.x = x.f32();
  d.xs0 = x.stride(0), d.xs1 = x.stride(1), d.xs2 = x.stride(2);
  d.w = w.f32();
  d.ws0 = w.stride(0), d.ws1 = w.stride(1);
  d.bias = bias ? bias->f32() : nullptr;
  d.bs = bias ? bias->stride(0) : 0;
  d.o = conv_out(y, residual, p.act);
  d.H = x.dim(1), d.W = x.dim(2), d.C = x.dim(3), d.Ho = y.dim(1), d.Wo = y.dim(2);
  d.sh = p.stride_h, d.sw = p.stride_w, d.pt = p.pad_top, d.pl = p.pad_left;
  const int64_t rows = x.dim(0) * d.Ho;
  const int T = static_cast<int>(std::min<int64_t>(num_threads(), rows));
  // A few chunks per thread: enough to balance, few enough that scheduling costs nothing.
  const int64_t chunk = std::max<int64_t>(1, rows / (8 * std::max(T, 1)));
  // Tile shape, measured on Zen 3 with the inputs coming from L2/L3 as in a network: 4 pixels x
  // 16 channels for thin maps at stride 1; one pixel x 32 channels for 128+ channels or stride 2,
  // where a 4-pixel tile's input footprint (3 x 6 or 3 x 9 pixels of C floats) leaves L1.
  const bool wide = d.C >= 128 || d.sw > 1;
#pragma omp parallel for num_threads(T) if (T > 1) schedule(dynamic, chunk)
  for (int64_t r = 0; r < rows; ++r) {
    if (wide) {
      dw_row<1, 4>(d, r / d.Ho, r % d.Ho);
    } else {
      dw_row<4, 2>(d, r / d.Ho, r % d.Ho);
    }
  }
  return true;
}

}  // namespace gpen::cpu::detail
