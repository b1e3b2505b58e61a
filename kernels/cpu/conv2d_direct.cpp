// Direct NHWC conv for shapes a GEMM serves badly: few output channels (RetinaFace's 1x1 convs
// of 8..32 channels, its SSH 3x3 convs of 16, the heads of 4..20) or few input channels (the
// 3-channel stems). A GEMM there spends its time packing operands and running the narrow edges
// of its micro-kernel, and writes an accumulator tile that a second pass finishes.
//
// Here the weight is repacked once per call as a [K][Cp] matrix (K = kh * kw * cin, Cp = cout
// rounded up to 8, zero columns beyond cout) with the bias beside it. A register tile of NP
// output pixels x NV vectors of 8 output channels accumulates, for each depth index, NP
// broadcast input values times NV weight vectors; when the input's pixels are contiguous
// (channel stride 1, pixel stride cin) the kx taps and channels of one kernel row are a single
// run of input floats. Interior tiles run with the full tap ranges; border pixels with their
// valid ranges (padding taps skipped, as in the GEMM path's zeros). Bias, activation and the
// residual are applied in registers before the one store. Output rows go to the OpenMP threads
// dynamically.
#include <omp.h>

#include <algorithm>

#include "kernels/cpu/conv2d_paths.h"
#include "kernels/cpu/weights8.h"
#include "kernels/cpu/ops.h"

namespace gpen::cpu::detail {

namespace {

constexpr int64_t kMaxCoutDirect = 32;       // wider outputs: the GEMM's micro-kernel is efficient
constexpr int64_t kMaxCinStem = 4;           // ... unless the input is this thin (stems)
constexpr int64_t kMaxPackedFloats = 1 << 16;  // packed weight bound (256 KiB)

int64_t round8(int64_t v) { return (v + 7) / 8 * 8; }

struct Dc {
  const float* x = nullptr;
  int64_t xs0 = 0, xs1 = 0, xs2 = 0, xcs = 1;
  const float* wp = nullptr;  // packed [K][Cp]
  const float* bp = nullptr;  // packed bias [Cp], or nullptr
  ConvOut o;
  int64_t H = 0, W = 0, Cin = 0, Ho = 0, Wo = 0, Co = 0, Cp = 0;
  int kh = 1, kw = 1, sh = 1, sw = 1, pt = 0, pl = 0;
};

// NP consecutive output pixels of row (n, oy) from ox0, output channels [c, c + 8 NV); taps ky in
// [ky0, ky1), kx in [kx0, kx1), which lie inside the input for every one of the pixels.
template <int NP, int NV, bool kContig>
__attribute__((always_inline)) inline void dc_tile(const Dc& d, int64_t n, int64_t oy, int64_t ox0, int64_t c, int ky0,
                                                   int ky1, int kx0, int kx1) {
  v8f acc[NP][NV];
#pragma GCC unroll 8
  for (int p = 0; p < NP; ++p)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[p][v] = v8f{};
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
        v8f wv[NV];
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) wv[v] = load8(wr + 8 * v);
#pragma GCC unroll 8
        for (int p = 0; p < NP; ++p) {
          const v8f xv = splat8(xp[p * ps + j]);
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
          v8f wv[NV];
#pragma GCC unroll 8
          for (int v = 0; v < NV; ++v) wv[v] = load8(wr + 8 * v);
#pragma GCC unroll 8
          for (int p = 0; p < NP; ++p) {
            const v8f xv = splat8(xp[p * ps + ci * d.xcs]);
#pragma GCC unroll 8
            for (int v = 0; v < NV; ++v) acc[p][v] += xv * wv[v];
          }
        }
      }
    }
  }
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) {
    const int64_t cv = c + 8 * v;
    const v8f b8 = d.bp ? load8(d.bp + cv) : v8f{};
    const int nc = static_cast<int>(std::min<int64_t>(8, d.Co - cv));
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) finish8(d.o, acc[p][v], d.bp != nullptr, b8, n, oy, ox0 + p, cv, nc);
  }
}

int clamp_tap(int64_t v, int k) { return static_cast<int>(std::clamp<int64_t>(v, 0, k)); }

// Output channels [c, c + 8 NV) of row (n, oy).
template <int NV, bool kContig>
void dc_block(const Dc& d, int64_t n, int64_t oy, int64_t c, int64_t lo, int64_t hi) {
  // Pixels per tile: the NP x NV accumulators, NV weights and a broadcast fit in 16 registers.
  constexpr int NP = NV == 2 ? 6 : 8;
  const int64_t iy0 = oy * d.sh - d.pt;
  const int ky0 = clamp_tap(-iy0, d.kh), ky1 = clamp_tap(d.H - iy0, d.kh);
  auto border = [&](int64_t ox) {
    const int64_t ix0 = ox * d.sw - d.pl;
    dc_tile<1, NV, kContig>(d, n, oy, ox, c, ky0, ky1, clamp_tap(-ix0, d.kw), clamp_tap(d.W - ix0, d.kw));
  };
  for (int64_t ox = 0; ox < lo; ++ox) border(ox);
  int64_t ox = lo;
  for (; ox + NP <= hi; ox += NP) dc_tile<NP, NV, kContig>(d, n, oy, ox, c, ky0, ky1, 0, d.kw);
  for (; ox < hi; ++ox) dc_tile<1, NV, kContig>(d, n, oy, ox, c, ky0, ky1, 0, d.kw);
  for (ox = hi; ox < d.Wo; ++ox) border(ox);
}

template <bool kContig>
void dc_row(const Dc& d, int64_t n, int64_t oy) {
  // Interior columns: every kx tap inside the row.
  const int64_t lo = std::min<int64_t>((d.pl + d.sw - 1) / d.sw, d.Wo);
  int64_t hi = d.W - d.kw + d.pl >= 0 ? std::min((d.W - d.kw + d.pl) / d.sw + 1, d.Wo) : 0;
  hi = std::max(hi, lo);
  int64_t c = 0;
  for (; c + 16 <= d.Cp; c += 16) dc_block<2, kContig>(d, n, oy, c, lo, hi);
  if (c < d.Cp) dc_block<1, kContig>(d, n, oy, c, lo, hi);
}

}  // namespace

bool direct_conv_suits(int64_t groups, int64_t cin, int64_t cout, int64_t depth) {
  if (groups != 1 || cin < 1 || cout < 1) return false;
  if (cout > kMaxCoutDirect && cin > kMaxCinStem) return false;
  return depth * round8(cout) <= kMaxPackedFloats;
}

size_t direct_conv_workspace_floats(int64_t depth, int64_t cout) {
  const int64_t cp = round8(cout);
  return static_cast<size_t>(depth * cp + cp);
}

void direct_conv(const Conv2dParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
                 const TensorView* residual, const TensorView& y, float* ws) {
  Dc d;
  d.H = x.dim(1), d.W = x.dim(2), d.Cin = x.dim(3), d.Ho = y.dim(1), d.Wo = y.dim(2), d.Co = y.dim(3);
  d.Cp = round8(d.Co);
  d.kh = p.kh, d.kw = p.kw, d.sh = p.stride_h, d.sw = p.stride_w, d.pt = p.pad_top, d.pl = p.pad_left;
  // Pack W[ky][kx][ci][co] (any strides) as rows k = (ky * kw + kx) * cin + ci of Cp floats.
  const int64_t K = int64_t{p.kh} * p.kw * d.Cin;
  float* wp = ws;
  for (int64_t ky = 0; ky < p.kh; ++ky)
    for (int64_t kx = 0; kx < p.kw; ++kx)
      for (int64_t ci = 0; ci < d.Cin; ++ci) {
        float* row = wp + ((ky * p.kw + kx) * d.Cin + ci) * d.Cp;
        load_weight_row(row, w, ky * w.stride(0) + kx * w.stride(1) + ci * w.stride(2), w.stride(3), 0, d.Cp, d.Co,
                        (ky * p.kw + kx) * d.Cin + ci);
      }
  if (bias) {
    float* bp = wp + K * d.Cp;
    for (int64_t co = 0; co < d.Cp; ++co) bp[co] = co < d.Co ? bias->f32()[co * bias->stride(0)] : 0.0f;
    d.bp = bp;
  }
  d.x = x.f32();
  d.xs0 = x.stride(0), d.xs1 = x.stride(1), d.xs2 = x.stride(2), d.xcs = x.stride(3);
  d.wp = wp;
  d.o = conv_out(y, residual, p.act);
  const bool contig = d.xcs == 1 && d.xs2 == d.Cin;
  const int64_t rows = x.dim(0) * d.Ho;
  const int T = static_cast<int>(std::min<int64_t>(num_threads(), rows));
  const int64_t chunk = std::max<int64_t>(1, rows / (8 * std::max(T, 1)));
#pragma omp parallel for num_threads(T) if (T > 1) schedule(dynamic, chunk)
  for (int64_t r = 0; r < rows; ++r) {
    if (contig) {
      dc_row<true>(d, r / d.Ho, r % d.Ho);
    } else {
      dc_row<false>(d, r / d.Ho, r % d.Ho);
    }
  }
}

}  // namespace gpen::cpu::detail
