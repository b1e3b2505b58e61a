// Pixel unshuffle (space-to-depth) of NHWC maps in PyTorch's channel order: output channel
// c*f*f + dy*f + dx of pixel (i, j) is input channel c of pixel (f*i + dy, f*j + dx). RRDBNet
// at scales 2 and 1 starts with it; a pure copy, so every backend must agree bit for bit.
#include <omp.h>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/strided.h"

namespace gpen::cpu {

void pixel_unshuffle(const PixelUnshuffleParams& p, const TensorView& x, const TensorView& y) {
  detail::check_f32(x, "pixel_unshuffle", "input");
  detail::check_f32(y, "pixel_unshuffle", "output");
  detail::check_rank(x, 4, "pixel_unshuffle", "input");
  detail::check_rank(y, 4, "pixel_unshuffle", "output");
  const int64_t f = p.factor;
  GPEN_CHECK(f >= 1, "pixel_unshuffle: factor must be positive, got " + std::to_string(f));
  const int64_t N = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3);
  GPEN_CHECK(H % f == 0 && W % f == 0, "pixel_unshuffle: input " + x.shape.str() +
                                           " is not a multiple of the factor " + std::to_string(f));
  const int64_t Ho = H / f, Wo = W / f;
  GPEN_CHECK(y.dim(0) == N && y.dim(1) == Ho && y.dim(2) == Wo && y.dim(3) == C * f * f,
             "pixel_unshuffle: output shape " + y.shape.str() + " must be [" + std::to_string(N) + ", " +
                 std::to_string(Ho) + ", " + std::to_string(Wo) + ", " + std::to_string(C * f * f) + "]");
  if (y.numel() == 0) return;
  const int T = y.numel() >= detail::kParallelMinElements ? num_threads() : 1;
#pragma omp parallel for collapse(2) num_threads(T) if (T > 1) schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t i = 0; i < Ho; ++i) {
      for (int64_t j = 0; j < Wo; ++j) {
        float* d = y.f32() + n * y.stride(0) + i * y.stride(1) + j * y.stride(2);
        for (int64_t dy = 0; dy < f; ++dy)
          for (int64_t dx = 0; dx < f; ++dx) {
            const float* s = x.f32() + n * x.stride(0) + (f * i + dy) * x.stride(1) + (f * j + dx) * x.stride(2);
            for (int64_t c = 0; c < C; ++c) d[(c * f * f + dy * f + dx) * y.stride(3)] = s[c * x.stride(3)];
          }
      }
    }
  }
}

}  // namespace gpen::cpu
