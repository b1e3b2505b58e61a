// Bilinear resize of NHWC maps, PyTorch's F.interpolate(mode='bilinear', align_corners=False)
// step by step (the source index, its floor, the clamped neighbour, the two-level blend), so that
// GFPGAN's ResBlocks and decoder skips resample as the official model does.
#include <omp.h>

#include <algorithm>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/strided.h"
#include "kernels/resize_band_check.h"
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

namespace gpen::cpu {

namespace {

// PyTorch's area_pixel_compute_source_index (align_corners=False, linear): the source position
// of output index o, its lower neighbour i0, the upper one i1 (the edge repeated past the end)
// and the weight of i1.
struct Tap {
  int64_t i0, i1;
  float l1;
};
Tap tap(int64_t o, int64_t in, int64_t out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  const float src = std::max(scale * (static_cast<float>(o) + 0.5f) - 0.5f, 0.0f);
  const int64_t i0 = std::min(static_cast<int64_t>(src), in - 1);
  const int64_t i1 = i0 < in - 1 ? i0 + 1 : i0;
  return {i0, i1, src - static_cast<float>(i0)};
}

}  // namespace

void resize_bilinear(const ResizeBilinearParams& p, const TensorView& x, const TensorView& y) {
  const char* op = "resize_bilinear";
  const bool band = p.in_h > 0;
  if (!band && !detail::check_resize(x, y, p.out_h, p.out_w, op)) return;
  if (band) {
    detail::check_f32(x, op, "input");
    detail::check_f32(y, op, "output");
    detail::check_rank(x, 4, op, "input");
    detail::check_rank(y, 4, op, "output");
    check_resize_band(p, x, y);
    if (y.numel() == 0) return;
  }
  // The taps of the whole op (global rows), read from x's rows.
  const int64_t N = x.dim(0), H = band ? p.in_h : x.dim(1), W = x.dim(2), C = x.dim(3);
  const int64_t Ho = y.dim(1), Wo = p.out_w, full_ho = p.out_h, r0 = p.out_row0, in0 = p.in_row0;
  const int64_t xc = x.stride(3), yc = y.stride(3);
  // The taps move down with the output row: the first and last rows bound the rows read.
  GPEN_CHECK(tap(r0, H, full_ho).i0 >= in0 && tap(r0 + Ho - 1, H, full_ho).i1 < in0 + x.dim(1),
             "resize_bilinear: output rows from " + std::to_string(r0) + " read input rows outside the band");
  const int T = y.numel() >= detail::kParallelMinElements ? num_threads() : 1;
#pragma omp parallel for collapse(2) num_threads(T) if (T > 1) schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t oy = 0; oy < Ho; ++oy) {
      const Tap ty = tap(r0 + oy, H, full_ho);
      const float h1 = ty.l1, h0 = 1.0f - h1;
      const float* r0p = x.f32() + n * x.stride(0) + (ty.i0 - in0) * x.stride(1);
      const float* r1p = x.f32() + n * x.stride(0) + (ty.i1 - in0) * x.stride(1);
      float* yrow = y.f32() + n * y.stride(0) + oy * y.stride(1);
      for (int64_t ox = 0; ox < Wo; ++ox) {
        const Tap tx = tap(ox, W, Wo);
        const float w1 = tx.l1, w0 = 1.0f - w1;
        const float* a = r0p + tx.i0 * x.stride(2);
        const float* b = r0p + tx.i1 * x.stride(2);
        const float* c = r1p + tx.i0 * x.stride(2);
        const float* d = r1p + tx.i1 * x.stride(2);
        float* o = yrow + ox * y.stride(2);
        for (int64_t k = 0; k < C; ++k)
          o[k * yc] = h0 * (w0 * a[k * xc] + w1 * b[k * xc]) + h1 * (w0 * c[k * xc] + w1 * d[k * xc]);
      }
    }
  }
}

}  // namespace gpen::cpu
