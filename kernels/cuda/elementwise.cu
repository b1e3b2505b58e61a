// Elementwise ops over the last axis: bias_act (y = act(x + b[c])) and add (y = act(a + b)).
// One thread per element in a grid-stride loop; consecutive threads take consecutive channels, so
// loads and stores of a row coalesce. Each element is read before it is written by the same
// thread, which makes in-place use (y == x) safe.
#include "kernels/cuda/common.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kThreads = 256;

// Views: 0 = x, 1 = y.
template <class T>
__global__ void __launch_bounds__(kThreads)
    bias_act_kernel(int64_t total, RowMap<2> map, const T* x, const T* bias, int64_t bias_stride, T* y,
                    Activation act) {
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = i / map.cols, c = i - row * map.cols;
    int64_t off[2];
    map.row_offsets(row, off);
    float v = to_f32(x[off[0] + c * map.col_stride[0]]);
    if (bias) v += to_f32(bias[c * bias_stride]);
    y[off[1] + c * map.col_stride[1]] = from_f32<T>(activate(act, v));
  }
}

// Views: 0 = a, 1 = b, 2 = y.
template <class T>
__global__ void __launch_bounds__(kThreads) add_kernel(int64_t total, RowMap<3> map, const T* a, const T* b, T* y,
                                                      Activation act) {
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = i / map.cols, c = i - row * map.cols;
    int64_t off[3];
    map.row_offsets(row, off);
    const float v = to_f32(a[off[0] + c * map.col_stride[0]]) + to_f32(b[off[1] + c * map.col_stride[1]]);
    y[off[2] + c * map.col_stride[2]] = from_f32<T>(activate(act, v));
  }
}

}  // namespace

void bias_act(const BiasActParams& p, const TensorView& x, const TensorView* bias, const TensorView& y,
              Stream stream) {
  check_view(x, x.dtype, "bias_act", "input");
  check_view(y, x.dtype, "bias_act", "output");
  check_same_shape(x, y, "bias_act", "input", "output");
  GPEN_CHECK(p.has_bias == (bias != nullptr), "bias_act: has_bias does not match the bias argument");
  const int64_t C = x.rank() == 0 ? 1 : x.dim(x.rank() - 1);
  if (bias) {
    check_view(*bias, x.dtype, "bias_act", "bias");
    GPEN_CHECK(bias->rank() == 1 && bias->dim(0) == C, "bias_act: bias shape " + bias->shape.str() + " must be [" +
                                                           std::to_string(C) + "] (last axis of " + x.shape.str() + ")");
  }
  if (x.numel() == 0) return;
  const RowMap<2> map = make_row_map<2>({&x, &y});
  dispatch_float(x.dtype, "bias_act", [&](auto tag) {
    using T = typename decltype(tag)::type;
    GPEN_LAUNCH(grid_for(x.numel(), kThreads), kThreads, 0, stream, bias_act_kernel<T>)(
        x.numel(), map, x.as<const T>(), bias ? bias->as<const T>() : nullptr, bias ? bias->stride(0) : 0, y.as<T>(), p.act);
  });
  check_launch("bias_act");
}

void add(const AddParams& p, const TensorView& a, const TensorView& b, const TensorView& y, Stream stream) {
  check_view(a, a.dtype, "add", "first input");
  check_view(b, a.dtype, "add", "second input");
  check_view(y, a.dtype, "add", "output");
  check_same_shape(a, b, "add", "first input", "second input");
  check_same_shape(a, y, "add", "input", "output");
  if (a.numel() == 0) return;
  const RowMap<3> map = make_row_map<3>({&a, &b, &y});
  dispatch_float(a.dtype, "add", [&](auto tag) {
    using T = typename decltype(tag)::type;
    GPEN_LAUNCH(grid_for(a.numel(), kThreads), kThreads, 0, stream, add_kernel<T>)(
        a.numel(), map, a.as<const T>(), b.as<const T>(), y.as<T>(), p.act);
  });
  check_launch("add");
}

GPEN_CUDA_NAMESPACE_END
