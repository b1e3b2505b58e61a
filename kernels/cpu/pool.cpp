// NHWC max pooling. Padded taps are skipped rather than read as zeros: PyTorch pads max pooling
// with -inf, so a window over negative values next to the border must not return 0. Every window
// holds at least one real tap because the graph builder requires pad < kernel size.
#include <omp.h>

#include <algorithm>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/simd8.h"
#include "kernels/cpu/strided.h"

namespace gpen::cpu {

void max_pool2d(const MaxPool2dParams& p, const TensorView& x, const TensorView& y) {
  detail::check_f32(x, "max_pool2d", "input");
  detail::check_f32(y, "max_pool2d", "output");
  detail::check_rank(x, 4, "max_pool2d", "input");
  detail::check_rank(y, 4, "max_pool2d", "output");
  GPEN_CHECK(p.kh >= 1 && p.kw >= 1 && p.stride_h >= 1 && p.stride_w >= 1, "max_pool2d: bad window");
  GPEN_CHECK(p.pad_top < p.kh && p.pad_bottom < p.kh && p.pad_left < p.kw && p.pad_right < p.kw &&
                 p.pad_top >= 0 && p.pad_left >= 0 && p.pad_bottom >= 0 && p.pad_right >= 0,
             "max_pool2d: padding must be in [0, kernel size)");
  const int64_t N = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3);
  const int64_t Ho = (H + p.pad_top + p.pad_bottom - p.kh) / p.stride_h + 1;
  const int64_t Wo = (W + p.pad_left + p.pad_right - p.kw) / p.stride_w + 1;
  GPEN_CHECK(y.dim(0) == N && y.dim(1) == Ho && y.dim(2) == Wo && y.dim(3) == C,
             "max_pool2d: output shape " + y.shape.str() + " does not match input " + x.shape.str());
  if (y.numel() == 0) return;
  const int64_t xc = x.stride(3), yc = y.stride(3);
  const int T = y.numel() >= detail::kParallelMinElements ? num_threads() : 1;
#pragma omp parallel for collapse(2) num_threads(T) if (T > 1) schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t oy = 0; oy < Ho; ++oy) {
      const int64_t y0 = std::max<int64_t>(oy * p.stride_h - p.pad_top, 0);
      const int64_t y1 = std::min<int64_t>(oy * p.stride_h - p.pad_top + p.kh, H);
      for (int64_t ox = 0; ox < Wo; ++ox) {
        const int64_t x0 = std::max<int64_t>(ox * p.stride_w - p.pad_left, 0);
        const int64_t x1 = std::min<int64_t>(ox * p.stride_w - p.pad_left + p.kw, W);
        float* d = y.f32() + n * y.stride(0) + oy * y.stride(1) + ox * y.stride(2);
        const float* first = x.f32() + n * x.stride(0) + y0 * x.stride(1) + x0 * x.stride(2);
        if (xc == 1 && yc == 1) {
          // Unit channel strides (RetinaFace R50's stem pool): eight channels at a time, the same
          // comparison lane by lane as the scalar loop below, so the same bits and NaN rule.
          int64_t c = 0;
          for (; c + 8 <= C; c += 8) {
            detail::v8f o = detail::load8(first + c);
            for (int64_t iy = y0; iy < y1; ++iy)
              for (int64_t ix = x0; ix < x1; ++ix) {
                const detail::v8f v = detail::load8(x.f32() + n * x.stride(0) + iy * x.stride(1) + ix * x.stride(2) + c);
                o = (v > o) | (v != v) ? v : o;
              }
            detail::store8(d + c, o);
          }
          if (c == C) continue;
          for (int64_t k = c; k < C; ++k) d[k] = first[k];
          for (int64_t iy = y0; iy < y1; ++iy)
            for (int64_t ix = x0; ix < x1; ++ix) {
              const float* s = x.f32() + n * x.stride(0) + iy * x.stride(1) + ix * x.stride(2);
              for (int64_t k = c; k < C; ++k) {
                const float v = s[k];
                if (v > d[k] || v != v) d[k] = v;
              }
            }
          continue;
        }
        for (int64_t c = 0; c < C; ++c) d[c * yc] = first[c * xc];
        for (int64_t iy = y0; iy < y1; ++iy)
          for (int64_t ix = x0; ix < x1; ++ix) {
            const float* s = x.f32() + n * x.stride(0) + iy * x.stride(1) + ix * x.stride(2);
            // NaN propagates as in PyTorch: a NaN tap wins.
            for (int64_t c = 0; c < C; ++c) {
              const float v = s[c * xc];
              float& o = d[c * yc];
              if (v > o || v != v) o = v;
            }
          }
      }
    }
  }
}

}  // namespace gpen::cpu
