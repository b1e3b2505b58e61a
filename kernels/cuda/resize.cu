// Nearest-neighbour resize of NHWC maps to an explicit size: source index floor(dst * in / out)
// in exact integer arithmetic, as the CPU op (PyTorch's 'nearest'). One thread per output
// element, channels fastest, so reads and writes of a pixel coalesce.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/nhwc_index.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kThreads = 256;

struct ResizeShape {
  int64_t n, h, w, c, ho, wo;
  NhwcStrides xs, ys;
};

template <class T>
__global__ void __launch_bounds__(kThreads) resize_nearest_kernel(const ResizeShape s, const T* x, T* y) {
  for_each_nhwc(s.n, s.ho, s.wo, s.c, [&](const NhwcIndex e) {
    const int64_t n = e.n, oy = e.y, ox = e.x, c = e.c;
    const int64_t iy = oy * s.h / s.ho, ix = ox * s.w / s.wo;
    y[n * s.ys.n + oy * s.ys.h + ox * s.ys.w + c * s.ys.c] = x[n * s.xs.n + iy * s.xs.h + ix * s.xs.w + c * s.xs.c];
  });
}

}  // namespace

void resize_nearest(const ResizeNearestParams& p, const TensorView& x, const TensorView& y, Stream stream) {
  check_view(x, x.dtype, "resize_nearest", "input");
  check_view(y, x.dtype, "resize_nearest", "output");
  check_rank(x, 4, "resize_nearest", "input");
  check_rank(y, 4, "resize_nearest", "output");
  GPEN_CHECK(p.out_h > 0 && p.out_w > 0, "resize_nearest: output size must be positive, got " +
                                             std::to_string(p.out_h) + "x" + std::to_string(p.out_w));
  const ResizeShape s{x.dim(0), x.dim(1), x.dim(2), x.dim(3), p.out_h, p.out_w, nhwc_strides(x), nhwc_strides(y)};
  GPEN_CHECK(y.dim(0) == s.n && y.dim(1) == s.ho && y.dim(2) == s.wo && y.dim(3) == s.c,
             "resize_nearest: output shape " + y.shape.str() + " must be [" + std::to_string(s.n) + ", " +
                 std::to_string(s.ho) + ", " + std::to_string(s.wo) + ", " + std::to_string(s.c) + "]");
  if (y.numel() == 0) return;
  GPEN_CHECK(s.h > 0 && s.w > 0, "resize_nearest: empty input " + x.shape.str());
  dispatch_float(x.dtype, "resize_nearest", [&](auto tag) {
    using T = typename decltype(tag)::type;
    GPEN_LAUNCH(grid_for(y.numel(), kThreads), kThreads, 0, stream, resize_nearest_kernel<T>)(s, x.as<const T>(),
                                                                                              y.as<T>());
  });
  check_launch("resize_nearest");
}

GPEN_CUDA_NAMESPACE_END
