// Fully connected layer, y[n, o] = act(sum_i x[n, i] w[o, i] * w_scale + b[o] * b_scale).
// The batch is tiny in every model here (one face, one style vector), so this is a set of dot
// products over the rows of the [out][in] weight, parallel over outputs; Eigen vectorises the dot
// and never allocates for it. 8-bit weights (engine/core/quant8.h, one scale per output row or per
// row and group of inputs) are dequantised one row at a time into a contiguous f32 row, which the
// same dot then reads: the result is the f32 path's on the dequantised weights, bit for bit.
#include <Eigen/Core>
#include <omp.h>

#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/strided.h"
#include "kernels/cpu/weights8.h"

namespace gpen::cpu {

namespace {

using ConstVec = Eigen::Map<const Eigen::VectorXf>;
using ConstStridedVec = Eigen::Map<const Eigen::VectorXf, 0, Eigen::InnerStride<>>;

float dot(const float* a, int64_t as, const float* b, int64_t bs, int64_t n) {
  if (as == 1 && bs == 1) return ConstVec(a, n).dot(ConstVec(b, n));
  return ConstStridedVec(a, n, Eigen::InnerStride<>(as)).dot(ConstStridedVec(b, n, Eigen::InnerStride<>(bs)));
}

}  // namespace

void dense(const DenseParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
           const TensorView& y) {
  detail::check_f32(x, "dense", "input");
  detail::check_weight_f32_or_8bit(w, "dense");
  detail::check_f32(y, "dense", "output");
  detail::check_rank(x, 2, "dense", "input");
  detail::check_rank(w, 2, "dense", "weight");
  detail::check_rank(y, 2, "dense", "output");
  const int64_t N = x.dim(0), I = x.dim(1), O = w.dim(0);
  GPEN_CHECK(w.dim(1) == I, "dense: weight " + w.shape.str() + " does not take " + std::to_string(I) + " inputs");
  GPEN_CHECK(y.dim(0) == N && y.dim(1) == O, "dense: output shape " + y.shape.str() + " must be [" +
                                                 std::to_string(N) + ", " + std::to_string(O) + "]");
  GPEN_CHECK(p.has_bias == (bias != nullptr), "dense: has_bias does not match the bias argument");
  if (bias) {
    detail::check_f32(*bias, "dense", "bias");
    GPEN_CHECK(bias->rank() == 1 && bias->dim(0) == O,
               "dense: bias shape " + bias->shape.str() + " must be [" + std::to_string(O) + "]");
  }
  const int64_t work = N * O * I;
  const int T = work >= (int64_t{1} << 16) ? num_threads() : 1;
  const Activation act = p.act;
  const auto out = [&](int64_t n, int64_t o, const float* wr, int64_t ws) {
    float v = dot(x.f32() + n * x.stride(0), x.stride(1), wr, ws, I) * p.w_scale;
    if (bias) v += bias->f32()[o * bias->stride(0)] * p.b_scale;
    y.f32()[n * y.stride(0) + o * y.stride(1)] = act(v);
  };
  if (dtype_is_8bit_weight(w.dtype)) {
    const uint8_t* codes = w.as<const uint8_t>();
    const bool fp8 = w.dtype == DType::f8e4m3;
#pragma omp parallel num_threads(T) if (T > 1)
    {
      std::vector<float> row(static_cast<size_t>(I));
#pragma omp for schedule(static)
      for (int64_t o = 0; o < O; ++o) {
        for (int64_t i = 0; i < I; ++i)
          row[static_cast<size_t>(i)] =
              q8_dequant(codes[o * w.stride(0) + i * w.stride(1)], fp8, w.qscale[q8_scale_index(i, o, O, w.qgroup)]);
        for (int64_t n = 0; n < N; ++n) out(n, o, row.data(), 1);
      }
    }
    return;
  }
#pragma omp parallel for collapse(2) num_threads(T) if (T > 1) schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t o = 0; o < O; ++o) out(n, o, w.f32() + o * w.stride(0), w.stride(1));
  }
}

}  // namespace gpen::cpu
