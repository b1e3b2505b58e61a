// GELU (erf form) and SiLU, as cpu::smooth_act: a warp per row of the last axis (launch_row_op),
// each element read once before its slot is written, so it may run in place.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_transformer.h"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kWarpsPerBlock = 8;

template <class T, bool Gelu>
__global__ void __launch_bounds__(kWarpsPerBlock * 32) smooth_act_kernel(int64_t rows, RowMap<2> map, const T* x, T* y) {
  const int64_t xs = map.col_stride[0], ys = map.col_stride[1];
  for_each_warp_row<kWarpsPerBlock>(rows, map, x, y, [&](int lane, const T* xr, T* yr) {
    for (int64_t c = lane; c < map.cols; c += 32) {
      const float v = to_f32(xr[c * xs]);
      yr[c * ys] = from_f32<T>(Gelu ? 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)) : v / (1.0f + expf(-v)));
    }
  });
}

}  // namespace

void smooth_act(const SmoothActParams& p, const TensorView& x, const TensorView& y, Stream stream) {
  const bool gelu = p.fn == SmoothAct::gelu;
  launch_row_op<kWarpsPerBlock>("smooth_act", x, y, stream, [gelu](auto tag) {
    using T = typename decltype(tag)::type;
    return gelu ? &smooth_act_kernel<T, true> : &smooth_act_kernel<T, false>;
  });
}

GPEN_CUDA_NAMESPACE_END
