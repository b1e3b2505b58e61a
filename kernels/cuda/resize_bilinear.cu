// Bilinear resize of NHWC maps, F.interpolate(mode='bilinear', align_corners=False), the same
// source index, neighbours and two-level blend as cpu::resize_bilinear. One thread per output
// element, channels fastest, so reads and writes of a pixel coalesce. A band of rows
// (ResizeBilinearParams::in_h > 0) takes the whole op's taps at its global rows.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/nhwc_index.cuh"
#include "kernels/cuda/ops_gfpgan.h"
#include "kernels/resize_band_check.h"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kThreads = 256;

struct BilinearShape {
  int64_t n, h, w, c, ho, wo;  // h: the whole op's input rows; ho: y's rows
  int64_t out_row0, in_row0;   // y's and x's first rows in the whole op (ResizeBilinearParams)
  float scale_y, scale_x;      // in / out of the whole op, as PyTorch's float scale
  NhwcStrides xs, ys;
};

struct Tap {
  int64_t i0, i1;
  float l1;
};
__device__ __forceinline__ Tap tap(int64_t o, int64_t in, float scale) {
  const float src = fmaxf(__fadd_rn(__fmul_rn(scale, static_cast<float>(o) + 0.5f), -0.5f), 0.0f);
  const int64_t f = static_cast<int64_t>(src), i0 = f < in - 1 ? f : in - 1;
  return {i0, i0 < in - 1 ? i0 + 1 : i0, src - static_cast<float>(i0)};
}

template <class T>
__global__ void __launch_bounds__(kThreads) resize_bilinear_kernel(const BilinearShape s, const T* x, T* y) {
  for_each_nhwc(s.n, s.ho, s.wo, s.c, [&](const NhwcIndex e) {
    const Tap ty = tap(s.out_row0 + e.y, s.h, s.scale_y), tx = tap(e.x, s.w, s.scale_x);
    const T* b = x + e.n * s.xs.n + e.c * s.xs.c;
    auto at = [&](int64_t iy, int64_t ix) { return to_f32(b[(iy - s.in_row0) * s.xs.h + ix * s.xs.w]); };
    const float h1 = ty.l1, h0 = 1.0f - h1, w1 = tx.l1, w0 = 1.0f - w1;
    // Products and sums rounded one by one, as the CPU op (no fused multiply-add).
    const float top = __fadd_rn(__fmul_rn(w0, at(ty.i0, tx.i0)), __fmul_rn(w1, at(ty.i0, tx.i1)));
    const float bot = __fadd_rn(__fmul_rn(w0, at(ty.i1, tx.i0)), __fmul_rn(w1, at(ty.i1, tx.i1)));
    y[e.n * s.ys.n + e.y * s.ys.h + e.x * s.ys.w + e.c * s.ys.c] =
        from_f32<T>(__fadd_rn(__fmul_rn(h0, top), __fmul_rn(h1, bot)));
  });
}

}  // namespace

void resize_bilinear(const ResizeBilinearParams& p, const TensorView& x, const TensorView& y, Stream stream) {
  check_view(x, x.dtype, "resize_bilinear", "input");
  check_view(y, x.dtype, "resize_bilinear", "output");
  check_rank(x, 4, "resize_bilinear", "input");
  check_rank(y, 4, "resize_bilinear", "output");
  GPEN_CHECK(p.out_h > 0 && p.out_w > 0, "resize_bilinear: output size must be positive, got " +
                                             std::to_string(p.out_h) + "x" + std::to_string(p.out_w));
  // A band (in_h > 0) takes the whole op's taps at its global rows; otherwise x and y are whole.
  const bool band = p.in_h > 0;
  const int64_t in_h = band ? p.in_h : x.dim(1), ho = band ? y.dim(1) : p.out_h;
  const BilinearShape s{x.dim(0), in_h, x.dim(2), x.dim(3), ho, p.out_w, band ? p.out_row0 : 0, band ? p.in_row0 : 0,
                        static_cast<float>(in_h) / static_cast<float>(p.out_h),
                        static_cast<float>(x.dim(2)) / static_cast<float>(p.out_w), nhwc_strides(x), nhwc_strides(y)};
  GPEN_CHECK(y.dim(0) == s.n && y.dim(1) == s.ho && y.dim(2) == s.wo && y.dim(3) == s.c,
             "resize_bilinear: output shape " + y.shape.str() + " must be [" + std::to_string(s.n) + ", " +
                 std::to_string(s.ho) + ", " + std::to_string(s.wo) + ", " + std::to_string(s.c) + "]");
  if (band) check_resize_band(p, x, y);
  if (y.numel() == 0) return;
  GPEN_CHECK(x.dim(1) > 0 && s.w > 0, "resize_bilinear: empty input " + x.shape.str());
  dispatch_float(x.dtype, "resize_bilinear", [&](auto tag) {
    using T = typename decltype(tag)::type;
    GPEN_LAUNCH(grid_for(y.numel(), kThreads), kThreads, 0, stream, resize_bilinear_kernel<T>)(s, x.as<const T>(),
                                                                                               y.as<T>());
  });
  check_launch("resize_bilinear");
}

GPEN_CUDA_NAMESPACE_END
