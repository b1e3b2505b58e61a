// Fully connected layer, y[n, o] = act(sum_i x[n, i] w[o, i] * w_scale + b[o] * b_scale).
// One warp per output element: the lanes walk the input axis in steps of 32 (consecutive lanes
// read consecutive weights of row o, so loads coalesce), then a butterfly shuffle sums the 32
// partial dot products. Batches are tiny in this engine (one style vector), so the weight matrix
// is read once per sample and the kernel is bound by that read. 8-bit weights (weights8.cuh: one
// scale per output row, or per row and group of inputs) are dequantised as each lane loads its
// code and rounded once to T, so the kernel computes what it would on a T weight holding the
// dequantised values.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/weights8.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kWarpsPerBlock = 8;

struct DenseShape {
  int64_t n, in, out;
  int64_t x_row, x_col, y_row, y_col, bias_stride;
  float w_scale, b_scale;
  Activation act;
};

template <class T>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    dense_kernel(const DenseShape s, const T* x, const T* w, const Weight8 w8, const T* bias, T* y) {
  const int lane = threadIdx.x % 32;
  const int64_t outputs = s.n * s.out;
  // Warp-uniform loop, so the shuffles below always see all 32 lanes.
  for (int64_t e = int64_t{blockIdx.x} * kWarpsPerBlock + threadIdx.x / 32; e < outputs;
       e += int64_t{gridDim.x} * kWarpsPerBlock) {
    const int64_t n = e / s.out, o = e % s.out;
    const T* xr = x + n * s.x_row;
    float acc = 0.0f;
    if (w8.codes) {
      const uint8_t* cr = w8.codes + o * s.in;
      for (int64_t i = lane; i < s.in; i += 32)
        acc += to_f32(xr[i * s.x_col]) *
               to_f32(from_f32<T>(q8_dequant(cr[i], w8.fp8, weight8_scales(w8, static_cast<int>(i))[o])));
    } else {
      const T* wr = w + o * s.in;
      for (int64_t i = lane; i < s.in; i += 32) acc += to_f32(xr[i * s.x_col]) * to_f32(wr[i]);
    }
    acc = warp_sum(acc);
    if (lane == 0) {
      float v = acc * s.w_scale;
      if (bias) v += to_f32(bias[o * s.bias_stride]) * s.b_scale;
      y[n * s.y_row + o * s.y_col] = from_f32<T>(activate(s.act, v));
    }
  }
}

}  // namespace

void dense(const DenseParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
           const TensorView& y, Stream stream) {
  check_view(x, x.dtype, "dense", "input");
  const Weight8 w8 = weight8_of(w, "dense");  // 8-bit weights: any activation dtype
  if (!w8.codes) check_view(w, x.dtype, "dense", "weight");
  check_view(y, x.dtype, "dense", "output");
  check_rank(x, 2, "dense", "input");
  check_rank(w, 2, "dense", "weight");
  check_rank(y, 2, "dense", "output");
  const int64_t N = x.dim(0), I = x.dim(1), O = w.dim(0);
  GPEN_CHECK(w.dim(1) == I, "dense: weight " + w.shape.str() + " does not take " + std::to_string(I) + " inputs");
  GPEN_CHECK(w.contiguous(), "dense: the weight must be contiguous [out][in]");
  GPEN_CHECK(y.dim(0) == N && y.dim(1) == O, "dense: output shape " + y.shape.str() + " must be [" +
                                                 std::to_string(N) + ", " + std::to_string(O) + "]");
  GPEN_CHECK(p.has_bias == (bias != nullptr), "dense: has_bias does not match the bias argument");
  if (bias) {
    check_view(*bias, x.dtype, "dense", "bias");
    GPEN_CHECK(bias->rank() == 1 && bias->dim(0) == O,
               "dense: bias shape " + bias->shape.str() + " must be [" + std::to_string(O) + "]");
  }
  if (N * O == 0) return;
  const DenseShape s{N,           I,           O, x.stride(0), x.stride(1), y.stride(0), y.stride(1),
                     bias ? bias->stride(0) : 0, p.w_scale, p.b_scale, p.act};
  dispatch_float(x.dtype, "dense", [&](auto tag) {
    using T = typename decltype(tag)::type;
    GPEN_LAUNCH(grid_for(N * O, kWarpsPerBlock), kWarpsPerBlock * 32, 0, stream, dense_kernel<T>)(
        s, x.as<const T>(), w8.codes ? nullptr : w.as<const T>(), w8, bias ? bias->as<const T>() : nullptr, y.as<T>());
  });
  check_launch("dense");
}

GPEN_CUDA_NAMESPACE_END
