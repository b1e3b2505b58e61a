// Reflection padding with an optional nearest upsample in front, one gather: ParseNet's
// Upsample(2) + ReflectionPad2d(1) before each of its convs. The conv after it then has zero
// padding 0 and runs on conv2d's fast paths (GEMM, direct) unchanged; this pass is a copy of
// contiguous channel runs, a small cost next to the conv it feeds.
#include <omp.h>

#include <cstring>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/strided.h"

namespace gpen::cpu {

namespace {

// Output index o of an axis of upsampled length n (= up * input length), padded by `pad`, reads
// input index reflect(o - pad) / up; reflect mirrors without repeating the edge (PyTorch's
// ReflectionPad2d: -1 -> 1, n -> n - 2). Needs pad < n. kernels/cuda/pad_reflect.cu has the same.
inline int64_t reflect_source(int64_t o, int64_t pad, int64_t n, int64_t up) {
  int64_t i = o - pad;
  if (i < 0) i = -i;
  if (i >= n) i = 2 * (n - 1) - i;
  return i / up;
}

}  // namespace

void pad_reflect(const PadReflectParams& p, const TensorView& x, const TensorView& y) {
  detail::check_f32(x, "pad_reflect", "input");
  detail::check_f32(y, "pad_reflect", "output");
  detail::check_rank(x, 4, "pad_reflect", "input");
  detail::check_rank(y, 4, "pad_reflect", "output");
  const int64_t N = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3);
  GPEN_CHECK(p.up >= 1 && p.pad >= 0, "pad_reflect: bad parameters (up " + std::to_string(p.up) + ", pad " +
                                          std::to_string(p.pad) + ")");
  const int64_t Hu = H * p.up, Wu = W * p.up;
  GPEN_CHECK(p.pad < Hu && p.pad < Wu, "pad_reflect: pad " + std::to_string(p.pad) + " needs an upsampled input larger than " +
                                           std::to_string(Hu) + "x" + std::to_string(Wu));
  const int64_t Ho = Hu + 2 * p.pad, Wo = Wu + 2 * p.pad;
  GPEN_CHECK(y.dim(0) == N && y.dim(1) == Ho && y.dim(2) == Wo && y.dim(3) == C,
             "pad_reflect: output shape " + y.shape.str() + " must be [" + std::to_string(N) + ", " +
                 std::to_string(Ho) + ", " + std::to_string(Wo) + ", " + std::to_string(C) + "]");
  if (y.numel() == 0) return;
  const bool unit = x.stride(3) == 1 && y.stride(3) == 1;
  const int T = y.numel() >= detail::kParallelMinElements ? num_threads() : 1;
#pragma omp parallel for collapse(2) num_threads(T) if (T > 1) schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t oy = 0; oy < Ho; ++oy) {
      const int64_t iy = reflect_source(oy, p.pad, Hu, p.up);
      const float* xrow = x.f32() + n * x.stride(0) + iy * x.stride(1);
      float* yrow = y.f32() + n * y.stride(0) + oy * y.stride(1);
      for (int64_t ox = 0; ox < Wo; ++ox) {
        const float* s = xrow + reflect_source(ox, p.pad, Wu, p.up) * x.stride(2);
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
