// Latent-vector ops of the StyleGAN2 decoder on the GPU: PixelNorm and the demodulation factors
// of the modulated convs (kernels/params.h). Both are tiny (a few hundred rows of <= 1024
// values), so one warp per output row with a shuffle reduction is all they need; sums are in f32.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_gpen.h"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kWarpsPerBlock = 8;

// Views: 0 = x, 1 = y.
template <class T>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    pixel_norm_kernel(int64_t rows, RowMap<2> map, const T* x, T* y) {
  const int64_t xs = map.col_stride[0], ys = map.col_stride[1];
  for_each_warp_row<kWarpsPerBlock>(rows, map, x, y, [&](int lane, const T* xr, T* yr) {
    float ss = 0.0f;
    for (int64_t c = lane; c < map.cols; c += 32) {
      const float v = to_f32(xr[c * xs]);
      ss += v * v;
    }
    ss = warp_sum(ss);
    // 1 / sqrtf (both correctly rounded) rather than rsqrtf (~2 ulp): the CPU twin is exact.
    const float f = 1.0f / sqrtf(ss / static_cast<float>(map.cols) + 1e-8f);
    // Every lane has read its elements before any writes (warp_sum), so y may alias x.
    for (int64_t c = lane; c < map.cols; c += 32) yr[c * ys] = from_f32<T>(to_f32(xr[c * xs]) * f);
  });
}

// One warp per (n, o): d[n, o] = rsqrt(sum_i s[n, i]^2 q[o, i] + 1e-8).
template <class T>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    demod_kernel(int64_t n, int64_t cin, int64_t cout, const T* s, int64_t s0, int64_t s1, const T* q, int64_t q0,
                 int64_t q1, T* d, int64_t d0, int64_t d1) {
  const int lane = threadIdx.x % 32;
  const int64_t first = int64_t{blockIdx.x} * kWarpsPerBlock + threadIdx.x / 32;
  for (int64_t r = first; r < n * cout; r += int64_t{gridDim.x} * kWarpsPerBlock) {
    const int64_t b = r / cout, o = r - b * cout;
    const T* sr = s + b * s0;
    const T* qr = q + o * q0;
    float acc = 0.0f;
    for (int64_t i = lane; i < cin; i += 32) {
      const float si = to_f32(sr[i * s1]);
      acc += si * si * to_f32(qr[i * q1]);
    }
    acc = warp_sum(acc);
    if (lane == 0) d[b * d0 + o * d1] = from_f32<T>(1.0f / sqrtf(acc + 1e-8f));
  }
}

}  // namespace

void pixel_norm(const PixelNormParams&, const TensorView& x, const TensorView& y, Stream stream) {
  launch_row_op<kWarpsPerBlock>("pixel_norm", x, y, stream,
                                [](auto tag) { return &pixel_norm_kernel<typename decltype(tag)::type>; });
}

void demod(const DemodParams&, const TensorView& s, const TensorView& q, const TensorView& d, Stream stream) {
  check_view(s, s.dtype, "demod", "style");
  check_view(q, s.dtype, "demod", "table");
  check_view(d, s.dtype, "demod", "output");
  GPEN_CHECK(s.rank() == 2 && q.rank() == 2 && d.rank() == 2 && q.dim(1) == s.dim(1) && d.dim(0) == s.dim(0) &&
                 d.dim(1) == q.dim(0),
             "demod: style " + s.shape.str() + ", table " + q.shape.str() + " and output " + d.shape.str() +
                 " do not match (expected [N, Cin], [Cout, Cin], [N, Cout])");
  const int64_t n = s.dim(0), cin = s.dim(1), cout = q.dim(0);
  if (n * cout == 0) return;
  dispatch_float(s.dtype, "demod", [&](auto tag) {
    using T = typename decltype(tag)::type;
    GPEN_LAUNCH(grid_for(n * cout, kWarpsPerBlock), kWarpsPerBlock * 32, 0, stream, demod_kernel<T>)(
        n, cin, cout, s.as<const T>(), s.stride(0), s.stride(1), q.as<const T>(), q.stride(0), q.stride(1), d.as<T>(),
        d.stride(0), d.stride(1));
  });
  check_launch("demod");
}

GPEN_CUDA_NAMESPACE_END
