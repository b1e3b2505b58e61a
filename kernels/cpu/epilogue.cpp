// Epilogue of the blur that follows a modulated transposed conv: y = act(y * out_scale[n, c] + bias[c]),
// in place. Applying the demodulation after the blur is exact because both are linear per channel.
#include <algorithm>

#include "kernels/cpu/ops.h"

// The fused blur epilogue (upfirdn2d_act) must give the bits of the separate pass in every build:
// both spell y * scale + bias as a multiply and an add, never contracted into one FMA (whether
// GCC contracts depends on the optimisation level, e.g. the sanitizer build's).
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

namespace gpen::cpu {

namespace {

// Channels handled per pass: the scale and bias rows are gathered into stack arrays of this size
// so the inner loop is contiguous whatever their strides.
constexpr int64_t kChunk = 256;

}  // namespace

void upfirdn2d_epilogue(const UpFirDn2dParams& p, const TensorView* out_scale, const TensorView* bias,
                        const TensorView& y) {
  GPEN_CHECK(y.dtype == DType::f32, "upfirdn2d epilogue: only f32 is supported on the CPU");
  GPEN_CHECK(y.rank() == 4, "upfirdn2d epilogue: output must be NHWC, got " + y.shape.str());
  GPEN_CHECK(p.has_out_scale == (out_scale != nullptr), "upfirdn2d epilogue: out_scale presence does not match params");
  GPEN_CHECK(p.has_bias == (bias != nullptr), "upfirdn2d epilogue: bias presence does not match params");
  const int64_t N = y.dim(0), H = y.dim(1), W = y.dim(2), C = y.dim(3);
  if (out_scale)
    GPEN_CHECK(
        out_scale->dtype == DType::f32 && out_scale->rank() == 2 && out_scale->dim(0) == N && out_scale->dim(1) == C,
        "upfirdn2d epilogue: out_scale must be [N, C] = [" + std::to_string(N) + ", " + std::to_string(C) + "], got " +
            out_scale->shape.str());
  if (bias)
    GPEN_CHECK(bias->dtype == DType::f32 && bias->rank() >= 1 && bias->numel() == C,
               "upfirdn2d epilogue: bias must have " + std::to_string(C) + " values, got " + bias->shape.str());
  if (!out_scale && !bias && p.act.is_identity()) return;
  if (y.numel() == 0) return;
  // act(v) = v * (v < 0 ? gneg : gpos): branch-free, the sign of v is data.
  const float gpos = p.act.gain, gneg = p.act.gain * p.act.slope;
  const int64_t bstride = bias ? bias->stride(bias->rank() - 1) : 0;
  const int64_t ys = y.stride(3);
  float* const yp = y.f32();

#pragma omp parallel for collapse(2) schedule(static) num_threads(num_threads())
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h) {
      float sc[kChunk], bv[kChunk];
      for (int64_t c0 = 0; c0 < C; c0 += kChunk) {
        const int64_t nc = std::min(kChunk, C - c0);
        for (int64_t c = 0; c < nc; ++c) {
          sc[c] = out_scale ? out_scale->f32()[n * out_scale->stride(0) + (c0 + c) * out_scale->stride(1)] : 1.0f;
          bv[c] = bias ? bias->f32()[(c0 + c) * bstride] : 0.0f;
        }
        for (int64_t w = 0; w < W; ++w) {
          float* row = yp + n * y.stride(0) + h * y.stride(1) + w * y.stride(2) + c0 * ys;
          if (ys == 1) {
            for (int64_t c = 0; c < nc; ++c) {
              const float v = row[c] * sc[c] + bv[c];
              row[c] = v * (v < 0.0f ? gneg : gpos);
            }
          } else {
            for (int64_t c = 0; c < nc; ++c) {
              const float v = row[c * ys] * sc[c] + bv[c];
              row[c * ys] = v * (v < 0.0f ? gneg : gpos);
            }
          }
        }
      }
    }
}

}  // namespace gpen::cpu
