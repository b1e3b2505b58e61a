#pragma once
// Internal to the CPU kernels: argument checks and row addressing for strided views.
#include <algorithm>
#include <cstdint>
#include <string>

#include "engine/core/error.h"
#include "engine/core/tensor.h"

namespace gpen::cpu::detail {

inline void check_f32(const TensorView& v, const char* op, const char* what) {
  GPEN_CHECK(v.data != nullptr || v.numel() == 0, std::string(op) + ": " + what + " has no data");
  GPEN_CHECK(v.dtype == DType::f32, std::string(op) + ": " + what + " must be f32, got " + dtype_name(v.dtype));
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

// The last axis is the "row" (channels for NHWC); rows are all other index combinations in
// row-major order. Returns the element offset of row r of v.
inline int64_t row_offset(const TensorView& v, int64_t r) {
  int64_t off = 0;
  for (int i = v.rank() - 2; i >= 0; --i) {
    const int64_t d = v.dim(i);
    off += (r % d) * v.stride(i);
    r /= d;
  }
  return off;
}

inline int64_t row_length(const TensorView& v) { return v.rank() == 0 ? 1 : v.dim(v.rank() - 1); }
inline int64_t row_stride(const TensorView& v) { return v.rank() == 0 ? 1 : v.stride(v.rank() - 1); }
inline int64_t row_count(const TensorView& v) {
  const int64_t len = row_length(v);
  return len == 0 ? 0 : v.numel() / len;
}

// act(v) = gain * (v >= 0 ? v : slope * v) without a branch, so loops using it vectorise: for
// v >= 0 the negative part is 0 and for v < 0 the positive part is 0, so the result is the same.
inline float act_branchless(float v, float slope, float gain) {
  return gain * (std::max(v, 0.0f) + slope * std::min(v, 0.0f));
}

// A resize of NHWC x to y [N, out_h, out_w, C], both f32: the checks of every resize op. Returns
// false when there is nothing to write (an empty output).
inline bool check_resize(const TensorView& x, const TensorView& y, int out_h, int out_w, const char* op) {
  check_f32(x, op, "input");
  check_f32(y, op, "output");
  check_rank(x, 4, op, "input");
  check_rank(y, 4, op, "output");
  GPEN_CHECK(out_h > 0 && out_w > 0, std::string(op) + ": output size must be positive, got " +
                                         std::to_string(out_h) + "x" + std::to_string(out_w));
  GPEN_CHECK(y.dim(0) == x.dim(0) && y.dim(1) == out_h && y.dim(2) == out_w && y.dim(3) == x.dim(3),
             std::string(op) + ": output shape " + y.shape.str() + " must be [" + std::to_string(x.dim(0)) + ", " +
                 std::to_string(out_h) + ", " + std::to_string(out_w) + ", " + std::to_string(x.dim(3)) + "]");
  if (y.numel() == 0) return false;
  GPEN_CHECK(x.dim(1) > 0 && x.dim(2) > 0, std::string(op) + ": empty input " + x.shape.str());
  return true;
}

// Parallelise elementwise loops only when there is enough work to pay for waking threads.
constexpr int64_t kParallelMinElements = 1 << 15;

}  // namespace gpen::cpu::detail
