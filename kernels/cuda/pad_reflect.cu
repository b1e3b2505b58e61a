// Nearest upsample + reflection pad in one gather, the twin of cpu::pad_reflect (same index
// rule, a copy, so bit-identical in every dtype). One thread per output element, channels
// fastest, so the reads and writes of a pixel coalesce.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/nhwc_index.cuh"
#include "kernels/cuda/ops_gpen.h"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kThreads = 256;

struct PadShape {
  int64_t n, hu, wu, c, ho, wo, pad, up;
  NhwcStrides xs, ys;
};

// PyTorch's ReflectionPad2d on the upsampled axis (-1 -> 1, n -> n - 2), then the nearest source.
__device__ __forceinline__ int64_t reflect_source(int64_t o, int64_t pad, int64_t n, int64_t up) {
  int64_t i = o - pad;
  if (i < 0) i = -i;
  if (i >= n) i = 2 * (n - 1) - i;
  return i / up;
}

template <class T>
__global__ void __launch_bounds__(kThreads) pad_reflect_kernel(const PadShape s, const T* x, T* y) {
  for_each_nhwc(s.n, s.ho, s.wo, s.c, [&](const NhwcIndex e) {
    const int64_t n = e.n, oy = e.y, ox = e.x, c = e.c;
    const int64_t iy = reflect_source(oy, s.pad, s.hu, s.up), ix = reflect_source(ox, s.pad, s.wu, s.up);
    y[n * s.ys.n + oy * s.ys.h + ox * s.ys.w + c * s.ys.c] = x[n * s.xs.n + iy * s.xs.h + ix * s.xs.w + c * s.xs.c];
  });
}

}  // namespace

void pad_reflect(const PadReflectParams& p, const TensorView& x, const TensorView& y, Stream stream) {
  check_view(x, x.dtype, "pad_reflect", "input");
  check_view(y, x.dtype, "pad_reflect", "output");
  check_rank(x, 4, "pad_reflect", "input");
  check_rank(y, 4, "pad_reflect", "output");
  GPEN_CHECK(p.up >= 1 && p.pad >= 0, "pad_reflect: bad parameters (up " + std::to_string(p.up) + ", pad " +
                                          std::to_string(p.pad) + ")");
  const int64_t hu = x.dim(1) * p.up, wu = x.dim(2) * p.up;
  GPEN_CHECK(p.pad < hu && p.pad < wu, "pad_reflect: pad " + std::to_string(p.pad) +
                                           " needs an upsampled input larger than " + std::to_string(hu) + "x" +
                                           std::to_string(wu));
  const PadShape s{x.dim(0), hu, wu, x.dim(3), hu + 2 * p.pad, wu + 2 * p.pad, p.pad, p.up, nhwc_strides(x),
                   nhwc_strides(y)};
  GPEN_CHECK(y.dim(0) == s.n && y.dim(1) == s.ho && y.dim(2) == s.wo && y.dim(3) == s.c,
             "pad_reflect: output shape " + y.shape.str() + " must be [" + std::to_string(s.n) + ", " +
                 std::to_string(s.ho) + ", " + std::to_string(s.wo) + ", " + std::to_string(s.c) + "]");
  if (y.numel() == 0) return;
  dispatch_float(x.dtype, "pad_reflect", [&](auto tag) {
    using T = typename decltype(tag)::type;
    GPEN_LAUNCH(grid_for(y.numel(), kThreads), kThreads, 0, stream, pad_reflect_kernel<T>)(s, x.as<const T>(),
                                                                                           y.as<T>());
  });
  check_launch("pad_reflect");
}

GPEN_CUDA_NAMESPACE_END
