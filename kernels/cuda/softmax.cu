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
  const int lane = threadIdx.x % 32;
  const int64_t first = int64_t{blockIdx.x} * kWarpsPerBlock + threadIdx.x / 32;
  // The loop bound is the same for all lanes of a warp, so shuffles see the whole warp.
  for (int64_t row = first; row < rows; row += int64_t{gridDim.x} * kWarpsPerBlock) {
    int64_t off[2];
    map.row_offsets(row, off);
    const T* xr = x + off[0];
    T* yr = y + off[1];
    const int64_t xs = map.col_stride[0], ys = map.col_stride[1];

    float mx = -INFINITY;
    for (int64_t c = lane; c < map.cols; c += 32) mx = fmaxf(mx, to_f32(xr[c * xs]));
    mx = warp_max(mx);
    float sum = 0.0f;
    for (int64_t c = lane; c < map.cols; c += 32) sum += expf(to_f32(xr[c * xs]) - mx);
    sum = warp_sum(sum);
    const float inv = 1.0f / sum;
    for (int64_t c = lane; c < map.cols; c += 32) yr[c * ys] = from_f32<T>(expf(to_f32(xr[c * xs]) - mx) * inv);
  }
}

}  // namespace

void softmax(const SoftmaxParams&, const TensorView& x, const TensorView& y, Stream stream) {
  check_view(x, x.dtype, "softmax", "input");
  check_view(y, x.dtype, "softmax", "output");
  check_same_shape(x, y, "softmax", "input", "output");
  GPEN_CHECK(x.rank() >= 1, "softmax: input must have at least one axis");
  if (x.numel() == 0) return;
  const RowMap<2> map = make_row_map<2>({&x, &y});
  const int64_t rows = x.numel() / map.cols;
  dispatch_float(x.dtype, "softmax", [&](auto tag) {
    using T = typename decltype(tag)::type;
    GPEN_LAUNCH(grid_for(rows, kWarpsPerBlock), kWarpsPerBlock * 32, 0, stream, softmax_kernel<T>)(
        rows, map, x.as<const T>(), y.as<T>());
  });
  check_launch("softmax");
}

GPEN_CUDA_NAMESPACE_END
