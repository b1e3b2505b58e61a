// Softmax over the last axis, y = exp(x - max) / sum exp(x - max). One warp per row: lanes stride
// over the row, then butterfly shuffles give every lane the row's maximum and sum. Rows here are
// short (RetinaFace: 2 logits per anchor), so a warp per row keeps the kernel simple; each lane
// reads an element again in the last pass instead of caching it, which keeps in-place use safe.
#include "kernels/cuda/common.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kWarpsPerBlock = 8;

// Views: 0 = x, 1 = y.
template <class T>
__global__ void __launch_bounds__(kWarpsPerBlock * 32) softmax_kernel(int64_t rows, RowMap<2> map, const T* x, T* y) {
  const int64_t xs = map.col_stride[0], ys = map.col_stride[1];
  for_each_warp_row<kWarpsPerBlock>(rows, map, x, y, [&](int lane, const T* xr, T* yr) {
    float mx = -INFINITY;
    for (int64_t c = lane; c < map.cols; c += 32) mx = fmaxf(mx, to_f32(xr[c * xs]));
    mx = warp_max(mx);
    float sum = 0.0f;
    for (int64_t c = lane; c < map.cols; c += 32) sum += expf(to_f32(xr[c * xs]) - mx);
    sum = warp_sum(sum);
    const float inv = 1.0f / sum;
    for (int64_t c = lane; c < map.cols; c += 32) yr[c * ys] = from_f32<T>(expf(to_f32(xr[c * xs]) - mx) * inv);
  });
}

}  // namespace

void softmax(const SoftmaxParams&, const TensorView& x, const TensorView& y, Stream stream) {
  launch_row_op<kWarpsPerBlock>("softmax", x, y, stream,
                                [](auto tag) { return &softmax_kernel<typename decltype(tag)::type>; });
}

GPEN_CUDA_NAMESPACE_END
