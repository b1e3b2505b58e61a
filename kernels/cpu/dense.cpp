// Fully connected layer, y[n, o] = act(sum_i x[n, i] w[o, i] * w_scale + b[o] * b_scale).
// For a few rows (GPEN's one style vector) a set of dot products over the rows of the [out][in]
// weight, parallel over outputs; Eigen vectorises the dot and never allocates for it. From
// kManyRows rows (the transformers' tokens: 256 x 512 -> 1024 a face) with unit inner strides, blocks of
// outputs on the per-ISA kernel of dense_isa.h, which reuses each weight panel over all rows. 8-bit weights (engine/core/quant8.h, one scale per output row or per
// row and group of inputs) are dequantised one row at a time into a contiguous f32 row, which the
// same dot then reads: the result is the f32 path's on the dequantised weights, bit for bit.
#include <Eigen/Core>
#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/dense_isa.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/strided.h"
#include "kernels/cpu/weights8.h"

namespace gpen::cpu {

namespace {

using ConstVec = Eigen::Map<const Eigen::VectorXf>;
using ConstStridedVec = Eigen::Map<const Eigen::VectorXf, 0, Eigen::InnerStride<>>;

// Which path a row takes must not depend on the batch: GPEN's and GFPGAN's style layers have one
// row per face, and a face restored alone must give the bits it gives in a batch (video frames,
// served requests, grow_batch). Their batches stay far below this; the transformers' token rows
// (256 per face and up) are always above it.
constexpr int64_t kManyRows = 256;

// The blocks write partial sums into y while others still read x: only for y apart from x.
bool apart(const TensorView& x, const TensorView& y) {
  const auto* xa = static_cast<const char*>(x.data);
  const auto* ya = static_cast<const char*>(y.data);
  const auto span = [](const TensorView& v) { return ((v.dim(0) - 1) * v.stride(0) + (v.dim(1) - 1) * v.stride(1) + 1) * 4; };
  return ya >= xa + span(x) || xa >= ya + span(y);
}

float dot(const float* a, int64_t as, const float* b, int64_t bs, int64_t n) {
  if (as == 1 && bs == 1) return ConstVec(a, n).dot(ConstVec(b, n));
  return ConstStridedVec(a, n, Eigen::InnerStride<>(as)).dot(ConstStridedVec(b, n, Eigen::InnerStride<>(bs)));
}

}  // namespace

namespace detail {

#ifndef GPEN_HAVE_AVX512_KERNELS
#define GPEN_HAVE_AVX512_KERNELS 0
#endif

DenseBlockFn dense_block_fn() {
#if GPEN_HAVE_AVX512_KERNELS
  if (cpu_isa() == Isa::avx512) return isa_avx512::dense_block;
#endif
  return isa_base::dense_block;
}

int64_t dense_width() {
#if GPEN_HAVE_AVX512_KERNELS
  if (cpu_isa() == Isa::avx512) return isa_avx512::dense_block_width();
#endif
  return isa_base::dense_block_width();
}

}  // namespace detail

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
  if (N >= kManyRows && O > 0 && x.stride(1) == 1 && w.stride(1) == 1 && y.stride(1) == 1 && I > 0 && apart(x, y)) {
    const detail::DenseBlockFn block = detail::dense_block_fn();
    const int64_t bw = detail::dense_width(), blocks = (O + bw - 1) / bw;
#pragma omp parallel for num_threads(T) if (T > 1) schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t o0 = b * bw, nw = std::min(bw, O - o0);
      float* yb = y.f32() + o0;
      block(x.f32(), x.stride(0), w.f32() + o0 * w.stride(0), w.stride(0), yb, y.stride(0), N, I, nw);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t o = 0; o < nw; ++o) {
          float v = yb[n * y.stride(0) + o] * p.w_scale;
          if (bias) v += bias->f32()[(o0 + o) * bias->stride(0)] * p.b_scale;
          yb[n * y.stride(0) + o] = act(v);
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
