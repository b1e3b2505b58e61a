// The clean StyleConv's epilogue, y = act(x * gain + noise_weight * noise[h, w] + bias[c]), in the
// order of cpu::noise_bias_act. One thread per element, channels fastest; each element is read
// before the same thread writes it, which makes in-place use (y == x) safe.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/nhwc_index.cuh"
#include "kernels/cuda/ops_gfpgan.h"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kThreads = 256;

struct NoiseShape {
  int64_t n, h, w, c;
  NhwcStrides xs, ys;
  int64_t noise_h, noise_w, bias;  // strides
};

template <class T>
__global__ void __launch_bounds__(kThreads)
    noise_bias_act_kernel(const NoiseShape s, const T* x, const T* noise, const T* noise_weight, const T* bias, T* y,
                          float gain, Activation act) {
  for_each_nhwc(s.n, s.h, s.w, s.c, [&](const NhwcIndex e) {
    const float nz = __fmul_rn(to_f32(noise_weight[0]), to_f32(noise[e.y * s.noise_h + e.x * s.noise_w]));
    float v = __fadd_rn(__fmul_rn(to_f32(x[e.n * s.xs.n + e.y * s.xs.h + e.x * s.xs.w + e.c * s.xs.c]), gain), nz);
    if (bias) v = __fadd_rn(v, to_f32(bias[e.c * s.bias]));
    y[e.n * s.ys.n + e.y * s.ys.h + e.x * s.ys.w + e.c * s.ys.c] = from_f32<T>(activate(act, v));
  });
}

}  // namespace

void noise_bias_act(const NoiseBiasActParams& p, const TensorView& x, const TensorView& noise,
                    const TensorView& noise_weight, const TensorView* bias, const TensorView& y, Stream stream) {
  const char* op = "noise_bias_act";
  check_view(x, x.dtype, op, "input");
  check_view(y, x.dtype, op, "output");
  check_view(noise, x.dtype, op, "noise");
  check_view(noise_weight, x.dtype, op, "noise weight");
  check_rank(x, 4, op, "input");
  check_same_shape(x, y, op, "input", "output");
  GPEN_CHECK(p.has_bias == (bias != nullptr), "noise_bias_act: has_bias does not match the bias argument");
  const int64_t r0 = p.noise_row0;
  GPEN_CHECK(noise.rank() == 2 && r0 >= 0 && noise.dim(0) >= r0 + x.dim(1) && noise.dim(1) == x.dim(2),
             "noise_bias_act: noise shape " + noise.shape.str() + " must hold rows [" + std::to_string(r0) + ", " +
                 std::to_string(r0 + x.dim(1)) + ") of " + std::to_string(x.dim(2)) + " columns (the map of " +
                 x.shape.str() + ")");
  GPEN_CHECK(noise_weight.numel() == 1, "noise_bias_act: noise weight must hold one value, got " + noise_weight.shape.str());
  if (bias) {
    check_view(*bias, x.dtype, op, "bias");
    GPEN_CHECK(bias->rank() == 1 && bias->dim(0) == x.dim(3),
               "noise_bias_act: bias shape " + bias->shape.str() + " must be [" + std::to_string(x.dim(3)) + "]");
  }
  if (x.numel() == 0) return;
  const NoiseShape s{x.dim(0), x.dim(1), x.dim(2), x.dim(3), nhwc_strides(x), nhwc_strides(y),
                     noise.stride(0), noise.stride(1), bias ? bias->stride(0) : 0};
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    GPEN_LAUNCH(grid_for(x.numel(), kThreads), kThreads, 0, stream, noise_bias_act_kernel<T>)(
        s, x.as<const T>(), noise.as<const T>() + r0 * noise.stride(0), noise_weight.as<const T>(),
        bias ? bias->as<const T>() : nullptr, y.as<T>(), p.gain, p.act);
  });
  check_launch(op);
}

GPEN_CUDA_NAMESPACE_END
