// Flat-index decomposition for the one-thread-per-element NHWC kernels (resize, pad_reflect,
// upfirdn2d): channels fastest, so consecutive threads touch consecutive channels of one pixel
// and both the reads and the writes coalesce.
#pragma once

#include <cstdint>

#include "kernels/cuda/common.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

struct NhwcIndex {
  int64_t n, y, x, c;
};

// Coordinates of element i of a dense [*, h, w, c] enumeration.
__device__ __forceinline__ NhwcIndex nhwc_index(int64_t i, int64_t h, int64_t w, int64_t c) {
  NhwcIndex r;
  r.c = i % c;
  int64_t p = i / c;
  r.x = p % w;
  p /= w;
  r.y = p % h;
  r.n = p / h;
  return r;
}

// Grid-stride loop over the n * h * w * c output elements, calling f(NhwcIndex).
template <class F>
__device__ __forceinline__ void for_each_nhwc(int64_t n, int64_t h, int64_t w, int64_t c, F&& f) {
  const int64_t total = n * h * w * c;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x)
    f(nhwc_index(i, h, w, c));
}

GPEN_CUDA_NAMESPACE_END
