#pragma once
// Helpers shared by the CUDA kernels: dtype conversion, the activation, warp reductions, the
// row addressing of strided views, argument checks, launch error checks and the launch of
// row-wise ops.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <type_traits>

#include "engine/core/error.h"
#include "engine/core/tensor.h"
#include "kernels/cuda/compat.h"
#include "kernels/cuda/ops.h"
#include "kernels/params.h"

GPEN_CUDA_NAMESPACE_BEGIN

// ---- Device helpers

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T>
__device__ __forceinline__ T from_f32(float v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(v);
  } else {
    return v;
  }
}

// The Activation of kernels/params.h, in device code: gain * (x >= 0 ? x : slope * x).
__device__ __forceinline__ float activate(const Activation& a, float x) {
  return a.gain * (x >= 0.0f ? x : a.slope * x);
}

// Sum / max over the 32 lanes of a warp; every lane gets the result.
__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Element offsets of rows of the last axis in NT views of one shape. Outer axes are merged
// where every view's strides allow it, so a dense tensor or a channel slice has one outer axis
// and costs one division per element.
template <int NT>
struct RowMap {
  int64_t cols = 1;  // length of the last axis
  int64_t col_stride[NT] = {};
  int outer = 0;  // merged outer axes, outermost first
  int64_t size[kMaxRank] = {};
  int64_t stride[kMaxRank][NT] = {};

  __host__ __device__ void row_offsets(int64_t row, int64_t (&off)[NT]) const {
    for (int t = 0; t < NT; ++t) off[t] = 0;
    for (int a = outer - 1; a >= 0; --a) {
      const int64_t i = row % size[a];
      row /= size[a];
      for (int t = 0; t < NT; ++t) off[t] += i * stride[a][t];
    }
  }
};

template <int NT>
RowMap<NT> make_row_map(const std::array<const TensorView*, NT>& views) {
  const TensorView& v0 = *views[0];
  RowMap<NT> m;
  const int rank = v0.rank();
  if (rank == 0) return m;
  m.cols = v0.dim(rank - 1);
  for (int t = 0; t < NT; ++t) m.col_stride[t] = views[t]->stride(rank - 1);
  for (int a = 0; a < rank - 1; ++a) {
    const int64_t n = v0.dim(a);
    if (n == 1) continue;
    bool merge = m.outer > 0;
    for (int t = 0; t < NT && merge; ++t) merge = m.stride[m.outer - 1][t] == n * views[t]->stride(a);
    if (merge) {
      m.size[m.outer - 1] *= n;
      for (int t = 0; t < NT; ++t) m.stride[m.outer - 1][t] = views[t]->stride(a);
    } else {
      m.size[m.outer] = n;
      for (int t = 0; t < NT; ++t) m.stride[m.outer][t] = views[t]->stride(a);
      ++m.outer;
    }
  }
  return m;
}

// The grid-stride loop of a row-wise kernel with a warp per row (launch_row_op): calls
// f(lane, x_row, y_row) for each row of x -> y this warp owns. The loop bound is the same for all
// lanes of a warp, so shuffles inside f see the whole warp.
template <int WarpsPerBlock, class T, class F>
__device__ __forceinline__ void for_each_warp_row(int64_t rows, const RowMap<2>& map, const T* x, T* y, F&& f) {
  const int lane = threadIdx.x % 32;
  const int64_t first = int64_t{blockIdx.x} * WarpsPerBlock + threadIdx.x / 32;
  for (int64_t row = first; row < rows; row += int64_t{gridDim.x} * WarpsPerBlock) {
    int64_t off[2];
    map.row_offsets(row, off);
    f(lane, x + off[0], y + off[1]);
  }
}

// Element strides of an NHWC view.
struct NhwcStrides {
  int64_t n = 0, h = 0, w = 0, c = 0;
};

// ---- Host helpers

inline NhwcStrides nhwc_strides(const TensorView& v) { return {v.stride(0), v.stride(1), v.stride(2), v.stride(3)}; }

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Blocks for a grid-stride loop over `work` items: enough to fill a GPU, capped so that huge
// tensors loop instead of launching millions of blocks.
inline unsigned grid_for(int64_t work, int threads) {
  return static_cast<unsigned>(std::clamp<int64_t>(ceil_div(work, threads), 1, 4096));
}

// Calls f(std::type_identity<T>{}) with the element type of dtype t.
template <class F>
void dispatch_float(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::f32: f(std::type_identity<float>{}); return;
    case DType::f16: f(std::type_identity<__half>{}); return;
    case DType::bf16: f(std::type_identity<__nv_bfloat16>{}); return;
    default: break;
  }
  throw Error(std::string(op) + ": unsupported dtype " + dtype_name(t) + " (expected f32, f16 or bf16)");
}

inline void check_view(const TensorView& v, DType dt, const char* op, const char* what) {
  GPEN_CHECK(v.data != nullptr || v.numel() == 0, std::string(op) + ": " + what + " has no data");
  GPEN_CHECK(v.dtype == dt, std::string(op) + ": " + what + " is " + dtype_name(v.dtype) + ", expected " +
                                dtype_name(dt) + " like the first input");
}

inline void check_rank(const TensorView& v, int rank, const char* op, const char* what) {
  GPEN_CHECK(v.rank() == rank, std::string(op) + ": " + what + " must have rank " + std::to_string(rank) +
                                   ", got shape " + v.shape.str());
}

inline void check_same_shape(const TensorView& a, const TensorView& b, const char* op, const char* wa,
                             const char* wb) {
  GPEN_CHECK(a.shape == b.shape, std::string(op) + ": " + wa + " " + a.shape.str() + " and " + wb + " " +
                                     b.shape.str() + " differ");
}

// Turns a failed launch (bad configuration, or a fault left by an earlier kernel) into an Error.
inline void check_launch(const char* op) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw Error(std::string("CUDA ") + op + ": " + cudaGetErrorString(e));
}

// The host side of an op applied along the last axis row by row, x -> y (one shape and dtype; y
// may alias x), by a kernel with a warp per row and WarpsPerBlock warps per block: argument
// checks, row map, launch and launch check. kernel_for(std::type_identity<T>{}) returns the
// kernel for element type T, called as kernel(rows, map, x, y).
template <int WarpsPerBlock, class KernelFor>
void launch_row_op(const char* op, const TensorView& x, const TensorView& y, Stream stream, KernelFor&& kernel_for) {
  check_view(x, x.dtype, op, "input");
  check_view(y, x.dtype, op, "output");
  check_same_shape(x, y, op, "input", "output");
  GPEN_CHECK(x.rank() >= 1, std::string(op) + ": input must have at least one axis");
  if (x.numel() == 0) return;
  const RowMap<2> map = make_row_map<2>({&x, &y});
  const int64_t rows = x.numel() / map.cols;
  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto row_kernel = kernel_for(tag);
    GPEN_LAUNCH(grid_for(rows, WarpsPerBlock), WarpsPerBlock * 32, 0, stream, row_kernel)(rows, map, x.as<const T>(),
                                                                                        y.as<T>());
  });
  check_launch(op);
}

GPEN_CUDA_NAMESPACE_END
