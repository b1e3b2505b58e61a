// NHWC max pooling on the GPU (ResNet's stem pool): one thread per output element, channels
// fastest so a warp reads consecutive channels of a tap. Padded taps are skipped (PyTorch pads
// with -inf) and a NaN tap wins, exactly as cpu::max_pool2d, so the results are bit-identical.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_gpen.h"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kThreads = 256;

struct PoolGeometry {
  int64_t n = 0, h = 0, w = 0, c = 0, ho = 0, wo = 0;
  int kh = 1, kw = 1, sh = 1, sw = 1, pt = 0, pl = 0;
  NhwcStrides xs, ys;
};

template <class T>
__global__ void __launch_bounds__(kThreads) max_pool2d_kernel(const PoolGeometry g, const T* x, T* y) {
  const int64_t total = g.n * g.ho * g.wo * g.c;
  for (int64_t e = int64_t{blockIdx.x} * kThreads + threadIdx.x; e < total; e += int64_t{gridDim.x} * kThreads) {
    int64_t rest = e;
    const int64_t c = rest % g.c;
    rest /= g.c;
    const int64_t ox = rest % g.wo;
    rest /= g.wo;
    const int64_t oy = rest % g.ho, n = rest / g.ho;
    // Window clipped to the image; pad < kernel size leaves at least one tap in it.
    const int64_t wy = oy * g.sh - g.pt, wx = ox * g.sw - g.pl;
    const int64_t y0 = wy > 0 ? wy : 0, y1 = wy + g.kh < g.h ? wy + g.kh : g.h;
    const int64_t x0 = wx > 0 ? wx : 0, x1 = wx + g.kw < g.w ? wx + g.kw : g.w;
    const T* xc = x + n * g.xs.n + c * g.xs.c;
    float o = to_f32(xc[y0 * g.xs.h + x0 * g.xs.w]);
    for (int64_t iy = y0; iy < y1; ++iy)
      for (int64_t ix = x0; ix < x1; ++ix) {
        const float v = to_f32(xc[iy * g.xs.h + ix * g.xs.w]);
        if (v > o || v != v) o = v;
      }
    y[n * g.ys.n + oy * g.ys.h + ox * g.ys.w + c * g.ys.c] = from_f32<T>(o);
  }
}

}  // namespace

void max_pool2d(const MaxPool2dParams& p, const TensorView& x, const TensorView& y, Stream stream) {
  check_view(x, x.dtype, "max_pool2d", "input");
  check_view(y, x.dtype, "max_pool2d", "output");
  check_rank(x, 4, "max_pool2d", "input");
  check_rank(y, 4, "max_pool2d", "output");
  GPEN_CHECK(p.kh >= 1 && p.kw >= 1 && p.stride_h >= 1 && p.stride_w >= 1, "max_pool2d: bad window");
  GPEN_CHECK(p.pad_top < p.kh && p.pad_bottom < p.kh && p.pad_left < p.kw && p.pad_right < p.kw && p.pad_top >= 0 &&
                 p.pad_left >= 0 && p.pad_bottom >= 0 && p.pad_right >= 0,
             "max_pool2d: padding must be in [0, kernel size)");
  PoolGeometry g;
  g.n = x.dim(0), g.h = x.dim(1), g.w = x.dim(2), g.c = x.dim(3);
  GPEN_CHECK(g.h + p.pad_top + p.pad_bottom >= p.kh && g.w + p.pad_left + p.pad_right >= p.kw,
             "max_pool2d: window larger than the padded input " + x.shape.str());
  g.ho = (g.h + p.pad_top + p.pad_bottom - p.kh) / p.stride_h + 1;
  g.wo = (g.w + p.pad_left + p.pad_right - p.kw) / p.stride_w + 1;
  GPEN_CHECK(y.dim(0) == g.n && y.dim(1) == g.ho && y.dim(2) == g.wo && y.dim(3) == g.c,
             "max_pool2d: output shape " + y.shape.str() + " does not match input " + x.shape.str());
  if (y.numel() == 0) return;
  g.kh = p.kh, g.kw = p.kw, g.sh = p.stride_h, g.sw = p.stride_w, g.pt = p.pad_top, g.pl = p.pad_left;
  g.xs = nhwc_strides(x);
  g.ys = nhwc_strides(y);
  dispatch_float(x.dtype, "max_pool2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    GPEN_LAUNCH(grid_for(y.numel(), kThreads), kThreads, 0, stream, max_pool2d_kernel<T>)(g, x.as<const T>(),
                                                                                         y.as<T>());
  });
  check_launch("max_pool2d");
}

GPEN_CUDA_NAMESPACE_END
