// Elementwise ops over the last axis: bias_act (y = act(x + b[c])) and add (y = act(a + b)).
// Rows are walked through each view's own strides, so any operand may be a channel slice, and the
// output may be the very same memory as an input (each element is read before it is written).
#include <omp.h>

#include <algorithm>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/strided.h"

namespace gpen::cpu {

namespace {

using detail::row_count;
using detail::row_length;
using detail::row_offset;
using detail::row_stride;

int threads_for(int64_t numel) {
  return numel >= detail::kParallelMinElements ? num_threads() : 1;
}

}  // namespace

void bias_act(const BiasActParams& p, const TensorView& x, const TensorView* bias, const TensorView& y) {
  detail::check_f32(x, "bias_act", "input");
  detail::check_f32(y, "bias_act", "output");
  detail::check_same_shape(x, y, "bias_act", "input", "output");
  GPEN_CHECK(p.has_bias == (bias != nullptr), "bias_act: has_bias does not match the bias argument");
  const int64_t C = row_length(x);
  if (bias) {
    detail::check_f32(*bias, "bias_act", "bias");
    GPEN_CHECK(bias->rank() == 1 && bias->dim(0) == C,
               "bias_act: bias shape " + bias->shape.str() + " must be [" + std::to_string(C) + "] (last axis of " +
                   x.shape.str() + ")");
  }
  const int64_t rows = row_count(x);
  const int64_t xs = row_stride(x), ys = row_stride(y), bs = bias ? bias->stride(0) : 0;
  const float* b = bias ? bias->f32() : nullptr;
  const float slope = p.act.slope, gain = p.act.gain;
  const bool unit = xs == 1 && ys == 1 && (!b || bs == 1);
  const int T = threads_for(x.numel());
#pragma omp parallel for num_threads(T) if (T > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xp = x.f32() + row_offset(x, r);
    float* yp = y.f32() + row_offset(y, r);
    if (unit) {
      // Not __restrict: xp and yp may be the same row (in place).
      if (b) {
        for (int64_t c = 0; c < C; ++c) yp[c] = detail::act_branchless(xp[c] + b[c], slope, gain);
      } else {
        for (int64_t c = 0; c < C; ++c) yp[c] = detail::act_branchless(xp[c], slope, gain);
      }
    } else {
      for (int64_t c = 0; c < C; ++c) yp[c * ys] = detail::act_branchless(xp[c * xs] + (b ? b[c * bs] : 0.0f), slope, gain);
    }
  }
}

void add(const AddParams& p, const TensorView& a, const TensorView& b, const TensorView& y) {
  detail::check_f32(a, "add", "first input");
  detail::check_f32(b, "add", "second input");
  detail::check_f32(y, "add", "output");
  detail::check_same_shape(a, b, "add", "first input", "second input");
  detail::check_same_shape(a, y, "add", "input", "output");
  const int64_t rows = row_count(a), C = row_length(a);
  const int64_t as = row_stride(a), bs = row_stride(b), ys = row_stride(y);
  const float slope = p.act.slope, gain = p.act.gain;
  const bool unit = as == 1 && bs == 1 && ys == 1;
  const int T = threads_for(a.numel());
#pragma omp parallel for num_threads(T) if (T > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* ap = a.f32() + row_offset(a, r);
    const float* bp = b.f32() + row_offset(b, r);
    float* yp = y.f32() + row_offset(y, r);
    if (unit) {
      for (int64_t c = 0; c < C; ++c) yp[c] = detail::act_branchless(ap[c] + bp[c], slope, gain);
    } else {
      for (int64_t c = 0; c < C; ++c) yp[c * ys] = detail::act_branchless(ap[c * as] + bp[c * bs], slope, gain);
    }
  }
}

}  // namespace gpen::cpu
