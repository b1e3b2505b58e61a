// conv2d's depthwise path for what depthwise3x3 (kernels/cpu/conv2d_depthwise.cpp) does not take:
// one input and one output channel per group, any kernel size, or an input that is not
// channel-contiguous; direct accumulation over the taps, vectorised over channels.
#include <cstring>

#include "kernels/cpu/conv2d_paths.h"

namespace gpen::cpu::detail {

namespace {

// acc[c] += sum over the taps t of xs[t][c] * ws[t][c], for one output pixel: channels in blocks
// of 32 and 8 held in registers across all taps.
void depthwise_pixel_unit(float* acc, const float* const* xs, const float* const* ws, int ntaps, int64_t C) {
  int64_t c0 = 0;
  for (; c0 + 32 <= C; c0 += 32) {
    v8f a0 = load8(acc + c0), a1 = load8(acc + c0 + 8), a2 = load8(acc + c0 + 16), a3 = load8(acc + c0 + 24);
    for (int t = 0; t < ntaps; ++t) {
      const float* xp = xs[t] + c0;
      const float* wp = ws[t] + c0;
      a0 += load8(xp) * load8(wp);
      a1 += load8(xp + 8) * load8(wp + 8);
      a2 += load8(xp + 16) * load8(wp + 16);
      a3 += load8(xp + 24) * load8(wp + 24);
    }
    store8(acc + c0, a0);
    store8(acc + c0 + 8, a1);
    store8(acc + c0 + 16, a2);
    store8(acc + c0 + 24, a3);
  }
  for (; c0 + 8 <= C; c0 += 8) {
    v8f a0 = load8(acc + c0);
    for (int t = 0; t < ntaps; ++t) a0 += load8(xs[t] + c0) * load8(ws[t] + c0);
    store8(acc + c0, a0);
  }
  for (int t = 0; t < ntaps; ++t)
    for (int64_t c = c0; c < C; ++c) acc[c] += xs[t][c] * ws[t][c];
}

void depthwise_pixel_strided(float* acc, const float* const* xs, const float* const* ws, int ntaps, int64_t C,
                             int64_t xcs, int64_t wcs) {
  for (int t = 0; t < ntaps; ++t)
    for (int64_t c = 0; c < C; ++c) acc[c] += xs[t][c * xcs] * ws[t][c * wcs];
}

}  // namespace

void depthwise_item(const Args& a, int64_t n, int64_t oy, int64_t ox0, int64_t len, float* acc) {
  const Geom& g = a.g;
  const Conv2dParams& p = *a.p;
  const TensorView& x = *a.x;
  const TensorView& w = *a.w;
  const int64_t C = g.C, xcs = x.stride(3), wcs = w.stride(3);
  const bool unit = xcs == 1 && wcs == 1;
  std::memset(acc, 0, static_cast<size_t>(len * C) * sizeof(float));
  // Taps go in batches small enough for pointer tables on the stack, whatever the kernel size.
  constexpr int kBatch = 32;
  const float* xs[kBatch];
  const float* ws[kBatch];
  for (int64_t ox = ox0; ox < ox0 + len; ++ox) {
    float* ap = acc + (ox - ox0) * C;
    int nt = 0;
    auto flush = [&]() {
      if (unit) {
        depthwise_pixel_unit(ap, xs, ws, nt, C);
      } else {
        depthwise_pixel_strided(ap, xs, ws, nt, C, xcs, wcs);
      }
      nt = 0;
    };
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      const int64_t iy = oy * p.stride_h + ky - p.pad_top;
      if (iy < 0 || iy >= g.H) continue;
      const float* xrow = x.f32() + n * x.stride(0) + iy * x.stride(1);
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        const int64_t ix = ox * p.stride_w + kx - p.pad_left;
        if (ix < 0 || ix >= g.W) continue;
        xs[nt] = xrow + ix * x.stride(2);
        ws[nt] = w.f32() + ky * w.stride(0) + kx * w.stride(1);
        if (++nt == kBatch) flush();
      }
    }
    if (nt) flush();
  }
  epilogue(a, (n * g.Ho + oy) * g.Wo + ox0, len, 0, C, acc);
}

}  // namespace gpen::cpu::detail
