// Softmax over the last axis, y = exp(x - max) / sum exp(x - max). Subtracting the row maximum
// keeps exp in range for any logits; it may run in place (x and y the same memory): each element
// is read once before its slot is overwritten.
#include <omp.h>

#include <cmath>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/strided.h"

namespace gpen::cpu {

void softmax(const SoftmaxParams&, const TensorView& x, const TensorView& y) {
  detail::check_f32(x, "softmax", "input");
  detail::check_f32(y, "softmax", "output");
  detail::check_same_shape(x, y, "softmax", "input", "output");
  GPEN_CHECK(x.rank() >= 1, "softmax: input must have at least one axis");
  const int64_t rows = detail::row_count(x), L = detail::row_length(x);
  const int64_t xs = detail::row_stride(x), ys = detail::row_stride(y);
  const int T = x.numel() >= detail::kParallelMinElements ? num_threads() : 1;
#pragma omp parallel for num_threads(T) if (T > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xp = x.f32() + detail::row_offset(x, r);
    float* yp = y.f32() + detail::row_offset(y, r);
    float mx = xp[0];
    for (int64_t i = 1; i < L; ++i) mx = std::fmax(mx, xp[i * xs]);
    // Accumulate the normaliser in double: rows can be long and the terms span many magnitudes.
    double sum = 0.0;
    for (int64_t i = 0; i < L; ++i) {
      const float e = std::exp(xp[i * xs] - mx);
      yp[i * ys] = e;
      sum += e;
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t i = 0; i < L; ++i) yp[i * ys] *= inv;
  }
}

}  // namespace gpen::cpu
