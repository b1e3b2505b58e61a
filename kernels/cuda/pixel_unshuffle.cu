// Pixel unshuffle (space-to-depth) of NHWC maps, the twin of kernels/cpu/pixel_unshuffle.cpp:
// output channel c*f*f + dy*f + dx of pixel (i, j) is input channel c of pixel (f*i + dy,
// f*j + dx). One thread per output element, output channels fastest so the writes coalesce
// (the reads of one pixel's C*f*f outputs touch f*f input pixels of C contiguous channels).
#include "kernels/cuda/common.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kThreads = 256;

struct UnshuffleShape {
  int64_t n, ho, wo, c, f;
  NhwcStrides xs, ys;
};

template <class T>
__global__ void __launch_bounds__(kThreads) pixel_unshuffle_kernel(const UnshuffleShape s, const T* x, T* y) {
  const int64_t co = s.c * s.f * s.f;
  const int64_t total = s.n * s.ho * s.wo * co;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t k = i % co;
    int64_t p = i / co;
    const int64_t ox = p % s.wo;
    p /= s.wo;
    const int64_t oy = p % s.ho;
    const int64_t n = p / s.ho;
    const int64_t c = k / (s.f * s.f), dy = (k / s.f) % s.f, dx = k % s.f;
    y[n * s.ys.n + oy * s.ys.h + ox * s.ys.w + k * s.ys.c] =
        x[n * s.xs.n + (oy * s.f + dy) * s.xs.h + (ox * s.f + dx) * s.xs.w + c * s.xs.c];
  }
}

}  // namespace

void pixel_unshuffle(const PixelUnshuffleParams& p, const TensorView& x, const TensorView& y, Stream stream) {
  check_view(x, x.dtype, "pixel_unshuffle", "input");
  check_view(y, x.dtype, "pixel_unshuffle", "output");
  check_rank(x, 4, "pixel_unshuffle", "input");
  check_rank(y, 4, "pixel_unshuffle", "output");
  const int64_t f = p.factor;
  GPEN_CHECK(f >= 1, "pixel_unshuffle: factor must be positive, got " + std::to_string(f));
  GPEN_CHECK(x.dim(1) % f == 0 && x.dim(2) % f == 0, "pixel_unshuffle: input " + x.shape.str() +
                                                         " is not a multiple of the factor " + std::to_string(f));
  const UnshuffleShape s{x.dim(0), x.dim(1) / f, x.dim(2) / f, x.dim(3), f, nhwc_strides(x), nhwc_strides(y)};
  GPEN_CHECK(y.dim(0) == s.n && y.dim(1) == s.ho && y.dim(2) == s.wo && y.dim(3) == s.c * f * f,
             "pixel_unshuffle: output shape " + y.shape.str() + " must be [" + std::to_string(s.n) + ", " +
                 std::to_string(s.ho) + ", " + std::to_string(s.wo) + ", " + std::to_string(s.c * f * f) + "]");
  if (y.numel() == 0) return;
  dispatch_float(x.dtype, "pixel_unshuffle", [&](auto tag) {
    using T = typename decltype(tag)::type;
    GPEN_LAUNCH(grid_for(y.numel(), kThreads), kThreads, 0, stream, pixel_unshuffle_kernel<T>)(s, x.as<const T>(),
                                                                                                y.as<T>());
  });
  check_launch("pixel_unshuffle");
}

GPEN_CUDA_NAMESPACE_END
