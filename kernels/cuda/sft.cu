// GFPGAN's SFT: y = x * scale + shift on the channels from c0, x below, as cpu::sft. One thread
// per element, channels fastest; each element is read before the same thread writes it, which
// makes in-place use (y == x) safe. CodeFormer's fuse block output (fuse_sft) below, the same way.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/nhwc_index.cuh"
#include "kernels/cuda/ops_gfpgan.h"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kThreads = 256;

struct SftShape {
  int64_t n, h, w, c, c0;
  NhwcStrides xs, ys, ss, ts;
};

template <class T>
__global__ void __launch_bounds__(kThreads) sft_kernel(const SftShape s, const T* x, const T* scale, const T* shift, T* y) {
  for_each_nhwc(s.n, s.h, s.w, s.c, [&](const NhwcIndex e) {
    const float v = to_f32(x[e.n * s.xs.n + e.y * s.xs.h + e.x * s.xs.w + e.c * s.xs.c]);
    float r = v;
    if (e.c >= s.c0) {
      const int64_t k = e.c - s.c0;
      r = __fadd_rn(__fmul_rn(v, to_f32(scale[e.n * s.ss.n + e.y * s.ss.h + e.x * s.ss.w + k * s.ss.c])),
                    to_f32(shift[e.n * s.ts.n + e.y * s.ts.h + e.x * s.ts.w + k * s.ts.c]));
    }
    y[e.n * s.ys.n + e.y * s.ys.h + e.x * s.ys.w + e.c * s.ys.c] = from_f32<T>(r);
  });
}

}  // namespace

void sft(const SftParams& p, const TensorView& x, const TensorView& scale, const TensorView& shift, const TensorView& y,
         Stream stream) {
  check_view(x, x.dtype, "sft", "input");
  check_view(scale, x.dtype, "sft", "scale");
  check_view(shift, x.dtype, "sft", "shift");
  check_view(y, x.dtype, "sft", "output");
  check_rank(x, 4, "sft", "input");
  check_same_shape(x, y, "sft", "input", "output");
  check_same_shape(scale, shift, "sft", "scale", "shift");
  const int64_t C = x.dim(3);
  GPEN_CHECK(p.c0 >= 0 && p.c0 < C, "sft: first modulated channel " + std::to_string(p.c0) + " is outside the " +
                                        std::to_string(C) + " channels of " + x.shape.str());
  GPEN_CHECK(scale.shape == (Shape{x.dim(0), x.dim(1), x.dim(2), C - p.c0}),
             "sft: scale and shift " + scale.shape.str() + " must be [" + std::to_string(x.dim(0)) + ", " +
                 std::to_string(x.dim(1)) + ", " + std::to_string(x.dim(2)) + ", " + std::to_string(C - p.c0) + "]");
  if (x.numel() == 0) return;
  const SftShape s{x.dim(0), x.dim(1), x.dim(2), C, p.c0, nhwc_strides(x), nhwc_strides(y), nhwc_strides(scale),
                   nhwc_strides(shift)};
  dispatch_float(x.dtype, "sft", [&](auto tag) {
    using T = typename decltype(tag)::type;
    GPEN_LAUNCH(grid_for(x.numel(), kThreads), kThreads, 0, stream, sft_kernel<T>)(
        s, x.as<const T>(), scale.as<const T>(), shift.as<const T>(), y.as<T>());
  });
  check_launch("sft");
}

GPEN_CUDA_NAMESPACE_END

// ---- CodeFormer's fuse block output, y = dec + w * (dec * scale + shift), as cpu::fuse_sft.
#include "kernels/cuda/ops_transformer.h"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

struct FuseShape {
  int64_t n, h, w, c;
  float wgt;
  NhwcStrides ds, ss, ts, ys;
};

template <class T>
__global__ void __launch_bounds__(kThreads) fuse_sft_kernel(const FuseShape s, const T* dec, const T* scale, const T* shift, T* y) {
  for_each_nhwc(s.n, s.h, s.w, s.c, [&](const NhwcIndex e) {
    const float d = to_f32(dec[e.n * s.ds.n + e.y * s.ds.h + e.x * s.ds.w + e.c * s.ds.c]);
    const float sc = to_f32(scale[e.n * s.ss.n + e.y * s.ss.h + e.x * s.ss.w + e.c * s.ss.c]);
    const float sh = to_f32(shift[e.n * s.ts.n + e.y * s.ts.h + e.x * s.ts.w + e.c * s.ts.c]);
    y[e.n * s.ys.n + e.y * s.ys.h + e.x * s.ys.w + e.c * s.ys.c] =
        from_f32<T>(__fadd_rn(d, __fmul_rn(s.wgt, __fadd_rn(__fmul_rn(d, sc), sh))));
  });
}

}  // namespace

void fuse_sft(const FuseSftParams& p, const TensorView& dec, const TensorView& scale, const TensorView& shift,
              const TensorView& y, Stream stream) {
  check_view(dec, dec.dtype, "fuse_sft", "input");
  check_view(scale, dec.dtype, "fuse_sft", "scale");
  check_view(shift, dec.dtype, "fuse_sft", "shift");
  check_view(y, dec.dtype, "fuse_sft", "output");
  check_rank(dec, 4, "fuse_sft", "input");
  check_same_shape(dec, y, "fuse_sft", "input", "output");
  check_same_shape(dec, scale, "fuse_sft", "input", "scale");
  check_same_shape(dec, shift, "fuse_sft", "input", "shift");
  if (dec.numel() == 0) return;
  const FuseShape s{dec.dim(0), dec.dim(1), dec.dim(2), dec.dim(3), p.w, nhwc_strides(dec), nhwc_strides(scale),
                    nhwc_strides(shift), nhwc_strides(y)};
  dispatch_float(dec.dtype, "fuse_sft", [&](auto tag) {
    using T = typename decltype(tag)::type;
    GPEN_LAUNCH(grid_for(dec.numel(), kThreads), kThreads, 0, stream, fuse_sft_kernel<T>)(
        s, dec.as<const T>(), scale.as<const T>(), shift.as<const T>(), y.as<T>());
  });
  check_launch("fuse_sft");
}

GPEN_CUDA_NAMESPACE_END
