// GELU (erf form, nn.GELU's default) and SiLU, elementwise over any view; may run in place.
#include <omp.h>

#include <cmath>

#include "kernels/cpu/exp_simd.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/strided.h"

namespace gpen::cpu {

void smooth_act(const SmoothActParams& p, const TensorView& x, const TensorView& y) {
  detail::check_f32(x, "smooth_act", "input");
  detail::check_f32(y, "smooth_act", "output");
  detail::check_same_shape(x, y, "smooth_act", "input", "output");
  GPEN_CHECK(x.rank() >= 1, "smooth_act: input must have at least one axis");
  const int64_t rows = detail::row_count(x), L = detail::row_length(x);
  const int64_t xs = detail::row_stride(x), ys = detail::row_stride(y);
  const bool gelu = p.fn == SmoothAct::gelu;
  const int T = x.numel() >= detail::kParallelMinElements ? num_threads() : 1;
#pragma omp parallel for num_threads(T) if (T > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xp = x.f32() + detail::row_offset(x, r);
    float* yp = y.f32() + detail::row_offset(y, r);
    if (gelu) {
      for (int64_t i = 0; i < L; ++i) {
        const float v = xp[i * xs];
        yp[i * ys] = 0.5f * v * (1.0f + std::erf(v * static_cast<float>(M_SQRT1_2)));
      }
    } else {
#pragma omp simd
      for (int64_t i = 0; i < L; ++i) yp[i * ys] = silu_simd(xp[i * xs]);
    }
  }
}

}  // namespace gpen::cpu
