// GFPGAN's Spatial Feature Transform: y = x * scale + shift on the channels from c0, a copy of x
// below (sft_half modulates the second half of the decoder's features). Any operand may be a
// strided view; y may be x itself (each element is read before it is written).
#include <omp.h>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/strided.h"
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

namespace gpen::cpu {

void sft(const SftParams& p, const TensorView& x, const TensorView& scale, const TensorView& shift,
         const TensorView& y) {
  detail::check_f32(x, "sft", "input");
  detail::check_f32(scale, "sft", "scale");
  detail::check_f32(shift, "sft", "shift");
  detail::check_f32(y, "sft", "output");
  detail::check_rank(x, 4, "sft", "input");
  detail::check_same_shape(x, y, "sft", "input", "output");
  detail::check_same_shape(scale, shift, "sft", "scale", "shift");
  const int64_t N = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3), c0 = p.c0;
  GPEN_CHECK(c0 >= 0 && c0 < C, "sft: first modulated channel " + std::to_string(c0) + " is outside the " +
                                    std::to_string(C) + " channels of " + x.shape.str());
  GPEN_CHECK(scale.shape == (Shape{N, H, W, C - c0}),
             "sft: scale and shift " + scale.shape.str() + " must be [" + std::to_string(N) + ", " + std::to_string(H) +
                 ", " + std::to_string(W) + ", " + std::to_string(C - c0) + "]");
  if (x.numel() == 0) return;
  const int64_t xc = x.stride(3), yc = y.stride(3), sc = scale.stride(3), tc = shift.stride(3);
  const int T = x.numel() >= detail::kParallelMinElements ? num_threads() : 1;
#pragma omp parallel for collapse(2) num_threads(T) if (T > 1) schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t w = 0; w < W; ++w) {
        const float* xp = x.f32() + n * x.stride(0) + h * x.stride(1) + w * x.stride(2);
        const float* sp = scale.f32() + n * scale.stride(0) + h * scale.stride(1) + w * scale.stride(2);
        const float* tp = shift.f32() + n * shift.stride(0) + h * shift.stride(1) + w * shift.stride(2);
        float* yp = y.f32() + n * y.stride(0) + h * y.stride(1) + w * y.stride(2);
        for (int64_t c = 0; c < c0; ++c) yp[c * yc] = xp[c * xc];
        for (int64_t c = c0; c < C; ++c) yp[c * yc] = xp[c * xc] * sp[(c - c0) * sc] + tp[(c - c0) * tc];
      }
    }
  }
}

}  // namespace gpen::cpu

namespace gpen::cpu {

// CodeFormer's Fuse_sft_block output, y = dec + w * (dec * scale + shift), in that order of
// rounding (the official module's). y may be dec itself.
void fuse_sft(const FuseSftParams& p, const TensorView& dec, const TensorView& scale, const TensorView& shift,
              const TensorView& y) {
  detail::check_f32(dec, "fuse_sft", "input");
  detail::check_f32(scale, "fuse_sft", "scale");
  detail::check_f32(shift, "fuse_sft", "shift");
  detail::check_f32(y, "fuse_sft", "output");
  detail::check_rank(dec, 4, "fuse_sft", "input");
  detail::check_same_shape(dec, y, "fuse_sft", "input", "output");
  detail::check_same_shape(dec, scale, "fuse_sft", "input", "scale");
  detail::check_same_shape(dec, shift, "fuse_sft", "input", "shift");
  const int64_t N = dec.dim(0), H = dec.dim(1), W = dec.dim(2), C = dec.dim(3);
  const float w = p.w;
  const int T = dec.numel() >= detail::kParallelMinElements ? num_threads() : 1;
  auto at = [](const TensorView& v, int64_t n, int64_t h, int64_t x) {
    return v.f32() + n * v.stride(0) + h * v.stride(1) + x * v.stride(2);
  };
#pragma omp parallel for collapse(2) num_threads(T) if (T > 1) schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t x = 0; x < W; ++x) {
        const float* dp = at(dec, n, h, x);
        const float* sp = at(scale, n, h, x);
        const float* tp = at(shift, n, h, x);
        float* yp = at(y, n, h, x);
        for (int64_t c = 0; c < C; ++c) {
          const float d = dp[c * dec.stride(3)];
          yp[c * y.stride(3)] = d + w * (d * sp[c * scale.stride(3)] + tp[c * shift.stride(3)]);
        }
      }
    }
  }
}

}  // namespace gpen::cpu
