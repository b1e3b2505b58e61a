// Nearest-neighbour resize of NHWC maps to an explicit size. The source index is
// floor(dst * in / out) in exact integer arithmetic: PyTorch's 'nearest' mode defines the same
// index, and integers keep it exact for every size (no float rounding at integer ratios).
#include <omp.h>

#include <cstring>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/strided.h"

namespace gpen::cpu {

void resize_nearest(const ResizeNearestParams& p, const TensorView& x, const TensorView& y) {
  if (!detail::check_resize(x, y, p.out_h, p.out_w, "resize_nearest")) return;
  const int64_t N = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3);
  const int64_t Ho = p.out_h, Wo = p.out_w;
  const bool unit = x.stride(3) == 1 && y.stride(3) == 1;
  const int T = y.numel() >= detail::kParallelMinElements ? num_threads() : 1;
#pragma omp parallel for collapse(2) num_threads(T) if (T > 1) schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t oy = 0; oy < Ho; ++oy) {
      const int64_t iy = oy * H / Ho;
      const float* xrow = x.f32() + n * x.stride(0) + iy * x.stride(1);
      float* yrow = y.f32() + n * y.stride(0) + oy * y.stride(1);
      for (int64_t ox = 0; ox < Wo; ++ox) {
        const int64_t ix = ox * W / Wo;
        const float* s = xrow + ix * x.stride(2);
        float* d = yrow + ox * y.stride(2);
        if (unit) {
          std::memcpy(d, s, static_cast<size_t>(C) * sizeof(float));
        } else {
          for (int64_t c = 0; c < C; ++c) d[c * y.stride(3)] = s[c * x.stride(3)];
        }
      }
    }
  }
}

}  // namespace gpen::cpu
