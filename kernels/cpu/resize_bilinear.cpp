// Bilinear resize of NHWC maps, PyTorch's F.interpolate(mode='bilinear', align_corners=False)
// step by step (the source index, its floor, the clamped neighbour, the two-level blend), so that
// GFPGAN's ResBlocks and decoder skips resample as the official model does.
#include <omp.h>

#include <algorithm>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/strided.h"
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
  if (!detail::check_resize(x, y, p.out_h, p.out_w, "resize_bilinear")) return;
  const int64_t N = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3);
  const int64_t Ho = p.out_h, Wo = p.out_w;
  const int64_t xc = x.stride(3), yc = y.stride(3);
  const int T = y.numel() >= detail::kParallelMinElements ? num_threads() : 1;
#pragma omp parallel for collapse(2) num_threads(T) if (T > 1) schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t oy = 0; oy < Ho; ++oy) {
      const Tap ty = tap(oy, H, Ho);
      const float h1 = ty.l1, h0 = 1.0f - h1;
      const float* r0 = x.f32() + n * x.stride(0) + ty.i0 * x.stride(1);
      const float* r1 = x.f32() + n * x.stride(0) + ty.i1 * x.stride(1);
      float* yrow = y.f32() + n * y.stride(0) + oy * y.stride(1);
      for (int64_t ox = 0; ox < Wo; ++ox) {
        const Tap tx = tap(ox, W, Wo);
        const float w1 = tx.l1, w0 = 1.0f - w1;
        const float* a = r0 + tx.i0 * x.stride(2);
        const float* b = r0 + tx.i1 * x.stride(2);
        const float* c = r1 + tx.i0 * x.stride(2);
        const float* d = r1 + tx.i1 * x.stride(2);
        float* o = yrow + ox * y.stride(2);
        for (int64_t k = 0; k < C; ++k)
          o[k * yc] = h0 * (w0 * a[k * xc] + w1 * b[k * xc]) + h1 * (w0 * c[k * xc] + w1 * d[k * xc]);
      }
    }
  }
}

}  // namespace gpen::cpu
