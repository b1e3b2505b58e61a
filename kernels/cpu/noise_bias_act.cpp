// The clean StyleConv's epilogue: y = act(x * gain + noise_weight * noise[h, w] + bias[c]), the
// three additions in the official order (modulated conv * sqrt 2, + noise, + bias, leaky relu).
// Any operand may be a strided view; y may be x itself (each element is read before it is written).
#include <omp.h>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/strided.h"
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

namespace gpen::cpu {

void noise_bias_act(const NoiseBiasActParams& p, const TensorView& x, const TensorView& noise,
                    const TensorView& noise_weight, const TensorView* bias, const TensorView& y) {
  const char* op = "noise_bias_act";
  detail::check_f32(x, op, "input");
  detail::check_f32(y, op, "output");
  detail::check_f32(noise, op, "noise");
  detail::check_f32(noise_weight, op, "noise weight");
  detail::check_rank(x, 4, op, "input");
  detail::check_same_shape(x, y, op, "input", "output");
  GPEN_CHECK(p.has_bias == (bias != nullptr), "noise_bias_act: has_bias does not match the bias argument");
  const int64_t N = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3);
  const int64_t r0 = p.noise_row0;
  GPEN_CHECK(noise.rank() == 2 && r0 >= 0 && noise.dim(0) >= r0 + H && noise.dim(1) == W,
             "noise_bias_act: noise shape " + noise.shape.str() + " must hold rows [" + std::to_string(r0) + ", " +
                 std::to_string(r0 + H) + ") of " + std::to_string(W) + " columns (the map of " + x.shape.str() + ")");
  GPEN_CHECK(noise_weight.numel() == 1, "noise_bias_act: noise weight must hold one value, got " + noise_weight.shape.str());
  if (bias) {
    detail::check_f32(*bias, op, "bias");
    GPEN_CHECK(bias->rank() == 1 && bias->dim(0) == C,
               "noise_bias_act: bias shape " + bias->shape.str() + " must be [" + std::to_string(C) + "]");
  }
  if (x.numel() == 0) return;
  const float nw = noise_weight.f32()[0];
  const float gain = p.gain, slope = p.act.slope, act_gain = p.act.gain;
  const float* b = bias ? bias->f32() : nullptr;
  const int64_t bs = bias ? bias->stride(0) : 0, xc = x.stride(3), yc = y.stride(3);
  const int T = x.numel() >= detail::kParallelMinElements ? num_threads() : 1;
#pragma omp parallel for collapse(2) num_threads(T) if (T > 1) schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t w = 0; w < W; ++w) {
        const float nz = nw * noise.f32()[(r0 + h) * noise.stride(0) + w * noise.stride(1)];
        const float* xp = x.f32() + n * x.stride(0) + h * x.stride(1) + w * x.stride(2);
        float* yp = y.f32() + n * y.stride(0) + h * y.stride(1) + w * y.stride(2);
        for (int64_t c = 0; c < C; ++c) {
          float v = xp[c * xc] * gain + nz;
          if (b) v = v + b[c * bs];
          yp[c * yc] = detail::act_branchless(v, slope, act_gain);
        }
      }
    }
  }
}

}  // namespace gpen::cpu
