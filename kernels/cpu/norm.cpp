// GroupNorm (NHWC, optionally followed by SiLU), LayerNorm over the last axis and CodeFormer's
// adaptive instance normalisation. Statistics in
// double, two passes (mean, then the mean squared deviation), so long groups of large values
// (VQGAN's 512-channel 16x16 maps) keep f32's precision; PyTorch's biased variance.
#include <omp.h>

#include <cmath>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/strided.h"

namespace gpen::cpu {

namespace {

inline float silu(float v) { return v / (1.0f + std::exp(-v)); }

void check_affine(const TensorView* gamma, const TensorView* beta, bool affine, int64_t C, const char* op) {
  GPEN_CHECK(affine == (gamma != nullptr && beta != nullptr),
             std::string(op) + ": affine needs gamma and beta, and only with affine");
  if (!affine) return;
  detail::check_f32(*gamma, op, "gamma");
  detail::check_f32(*beta, op, "beta");
  GPEN_CHECK(gamma->shape == Shape{C} && beta->shape == Shape{C},
             std::string(op) + ": gamma " + gamma->shape.str() + " and beta " + beta->shape.str() + " must be [" +
                 std::to_string(C) + "]");
}

// Mean and unbiased variance of channel c of sample n over the H x W positions (two passes).
void channel_stats(const TensorView& x, int64_t n, int64_t c, double& mean, double& var) {
  const int64_t H = x.dim(1), W = x.dim(2);
  auto at = [&](int64_t h, int64_t w) { return x.f32()[n * x.stride(0) + h * x.stride(1) + w * x.stride(2) + c * x.stride(3)]; };
  double sum = 0.0;
  for (int64_t h = 0; h < H; ++h)
    for (int64_t w = 0; w < W; ++w) sum += at(h, w);
  mean = sum / static_cast<double>(H * W);
  double sq = 0.0;
  for (int64_t h = 0; h < H; ++h)
    for (int64_t w = 0; w < W; ++w) {
      const double d = at(h, w) - mean;
      sq += d * d;
    }
  var = sq / static_cast<double>(H * W - 1);
}

}  // namespace

void group_norm(const GroupNormParams& p, const TensorView& x, const TensorView* gamma, const TensorView* beta,
                const TensorView& y) {
  detail::check_f32(x, "group_norm", "input");
  detail::check_f32(y, "group_norm", "output");
  detail::check_rank(x, 4, "group_norm", "input");
  detail::check_same_shape(x, y, "group_norm", "input", "output");
  const int64_t N = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3), G = p.groups;
  GPEN_CHECK(G > 0 && C % G == 0, "group_norm: " + std::to_string(C) + " channels of " + x.shape.str() +
                                      " do not split into " + std::to_string(G) + " groups");
  check_affine(gamma, beta, p.affine, C, "group_norm");
  if (x.numel() == 0) return;
  const int64_t cg = C / G, xc = x.stride(3), yc = y.stride(3);
  const double count = static_cast<double>(H * W * cg);
  auto px = [&](int64_t n, int64_t h, int64_t w) { return x.f32() + n * x.stride(0) + h * x.stride(1) + w * x.stride(2); };
  const int T = x.numel() >= detail::kParallelMinElements ? num_threads() : 1;
#pragma omp parallel for collapse(2) num_threads(T) if (T > 1) schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t g = 0; g < G; ++g) {
      const int64_t c0 = g * cg;
      double sum = 0.0;
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          const float* xp = px(n, h, w);
          for (int64_t c = c0; c < c0 + cg; ++c) sum += xp[c * xc];
        }
      const double mean = sum / count;
      double sq = 0.0;
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          const float* xp = px(n, h, w);
          for (int64_t c = c0; c < c0 + cg; ++c) {
            const double d = xp[c * xc] - mean;
            sq += d * d;
          }
        }
      const double inv = 1.0 / std::sqrt(sq / count + static_cast<double>(p.eps));
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          const float* xp = px(n, h, w);
          float* yp = y.f32() + n * y.stride(0) + h * y.stride(1) + w * y.stride(2);
          for (int64_t c = c0; c < c0 + cg; ++c) {
            float v = static_cast<float>((xp[c * xc] - mean) * inv);
            if (p.affine) v = v * gamma->f32()[c * gamma->stride(0)] + beta->f32()[c * beta->stride(0)];
            yp[c * yc] = p.silu ? silu(v) : v;
          }
        }
    }
  }
}

void layer_norm(const LayerNormParams& p, const TensorView& x, const TensorView* gamma, const TensorView* beta,
                const TensorView& y) {
  detail::check_f32(x, "layer_norm", "input");
  detail::check_f32(y, "layer_norm", "output");
  detail::check_same_shape(x, y, "layer_norm", "input", "output");
  GPEN_CHECK(x.rank() >= 1, "layer_norm: input must have at least one axis");
  const int64_t rows = detail::row_count(x), L = detail::row_length(x);
  check_affine(gamma, beta, p.affine, L, "layer_norm");
  const int64_t xs = detail::row_stride(x), ys = detail::row_stride(y);
  const int T = x.numel() >= detail::kParallelMinElements ? num_threads() : 1;
#pragma omp parallel for num_threads(T) if (T > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xp = x.f32() + detail::row_offset(x, r);
    float* yp = y.f32() + detail::row_offset(y, r);
    double sum = 0.0;
    for (int64_t i = 0; i < L; ++i) sum += xp[i * xs];
    const double mean = sum / static_cast<double>(L);
    double sq = 0.0;
    for (int64_t i = 0; i < L; ++i) {
      const double d = xp[i * xs] - mean;
      sq += d * d;
    }
    const double inv = 1.0 / std::sqrt(sq / static_cast<double>(L) + static_cast<double>(p.eps));
    for (int64_t i = 0; i < L; ++i) {
      float v = static_cast<float>((xp[i * xs] - mean) * inv);
      if (p.affine) v = v * gamma->f32()[i * gamma->stride(0)] + beta->f32()[i * beta->stride(0)];
      yp[i * ys] = v;
    }
  }
}

void adain(const AdaInParams& p, const TensorView& x, const TensorView& style, const TensorView& y) {
  detail::check_f32(x, "adain", "input");
  detail::check_f32(style, "adain", "style");
  detail::check_f32(y, "adain", "output");
  detail::check_rank(x, 4, "adain", "input");
  detail::check_rank(style, 4, "adain", "style");
  detail::check_same_shape(x, y, "adain", "input", "output");
  const int64_t N = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3);
  GPEN_CHECK(style.dim(0) == N && style.dim(3) == C && H * W >= 2 && style.dim(1) * style.dim(2) >= 2,
             "adain: input " + x.shape.str() + " and style " + style.shape.str() +
                 " need the same N and C and at least two positions each");
  const int T = x.numel() >= detail::kParallelMinElements ? num_threads() : 1;
#pragma omp parallel for collapse(2) num_threads(T) if (T > 1) schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < C; ++c) {
      double xm = 0, xv = 0, sm = 0, sv = 0;
      channel_stats(x, n, c, xm, xv);
      channel_stats(style, n, c, sm, sv);
      const double eps = static_cast<double>(p.eps);
      const double gain = std::sqrt(sv + eps) / std::sqrt(xv + eps);
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          const float v = x.f32()[n * x.stride(0) + h * x.stride(1) + w * x.stride(2) + c * x.stride(3)];
          y.f32()[n * y.stride(0) + h * y.stride(1) + w * y.stride(2) + c * y.stride(3)] =
              static_cast<float>((v - xm) * gain + sm);
        }
    }
  }
}

}  // namespace gpen::cpu
