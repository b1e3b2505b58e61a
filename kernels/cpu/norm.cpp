// GroupNorm (NHWC, optionally followed by SiLU), LayerNorm over the last axis and CodeFormer's
// adaptive instance normalisation. Statistics in double (GroupNorm's in one pass of shifted sums,
// the others in two: mean, then the mean squared deviation), so long groups of large values
// (VQGAN's 512-channel 16x16 maps) keep f32's precision; PyTorch's biased variance.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/cpu/exp_simd.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/norm_isa.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/strided.h"

namespace gpen::cpu {

namespace {

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

namespace {

// Per channel of sample n, over the H x W positions in order, for channels [c0, c1): the sums of
// d and d^2 in double, d = x - shift[c] with shift[c] the channel's value at the first position (so
// the squares stay near the data's spread, not its mean: no cancellation when a channel's mean is
// large against its deviation). Each channel's sums run over the positions in the same order
// however the channels are split among threads, so the statistics do not depend on the thread
// count; a task reads its channels' slice of every position (whole cache lines for slices of 16
// channels), one pass where a loop per group would read every line of the tensor once per group.
#ifndef GPEN_HAVE_AVX512_KERNELS
#define GPEN_HAVE_AVX512_KERNELS 0
#endif

// The unit-stride sweeps run on the ISA's vectors (norm_kernel.cpp); the result is the same on both.
bool norm_wide() { return GPEN_HAVE_AVX512_KERNELS && cpu_isa() == Isa::avx512; }

template <bool kUnit>
void channel_sums(const TensorView& x, int64_t n, int64_t c0, int64_t c1, double* shift, double* s1, double* s2) {
  const int64_t H = x.dim(1), W = x.dim(2), xc = kUnit ? 1 : x.stride(3), k = c1 - c0;
  if constexpr (kUnit) {
    const detail::GnSlice s{x.f32() + n * x.stride(0) + c0, H, W, x.stride(1), x.stride(2), k};
#if GPEN_HAVE_AVX512_KERNELS
    if (norm_wide()) return detail::isa_avx512::gn_sums(s, shift, s1, s2);
#endif
    return detail::isa_base::gn_sums(s, shift, s1, s2);
  }
  const float* first = x.f32() + n * x.stride(0) + c0 * xc;
  for (int64_t i = 0; i < k; ++i) {
    shift[i] = static_cast<double>(first[i * xc]);
    s1[i] = s2[i] = 0.0;
  }
  for (int64_t h = 0; h < H; ++h)
    for (int64_t w = 0; w < W; ++w) {
      const float* xp = x.f32() + n * x.stride(0) + h * x.stride(1) + w * x.stride(2) + c0 * xc;
#pragma omp simd
      for (int64_t i = 0; i < k; ++i) {
        const double d = static_cast<double>(xp[i * xc]) - shift[i];
        s1[i] += d;
        s2[i] += d * d;
      }
    }
}

template <bool kUnit>
void group_norm_impl(const GroupNormParams& p, const TensorView& x, const TensorView* gamma, const TensorView* beta,
                     const TensorView& y) {
  const int64_t N = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3), G = p.groups, cg = C / G;
  const int64_t xc = kUnit ? 1 : x.stride(3), yc = kUnit ? 1 : y.stride(3);
  const double hw = static_cast<double>(H * W), count = hw * static_cast<double>(cg);
  const int T = x.numel() >= detail::kParallelMinElements ? num_threads() : 1;
  // Groups a chunk at a time, so the per-channel figures live on the stack.
  constexpr int64_t kChunk = 1024;
  GPEN_CHECK(cg <= kChunk, "group_norm: groups of more than " + std::to_string(kChunk) + " channels");
  const int64_t groups_per_chunk = kChunk / cg;
  double shift[kChunk], s1[kChunk], s2[kChunk], centre[kChunk], scale[kChunk];  // per channel of the chunk
  float mul[kChunk], add[kChunk];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g0 = 0; g0 < G; g0 += groups_per_chunk) {
      const int64_t g1 = std::min(G, g0 + groups_per_chunk), c0 = g0 * cg, cc = (g1 - g0) * cg;
      // Channel slices per thread: at least 16 channels each (a cache line of floats).
      const int parts = static_cast<int>(std::clamp<int64_t>(cc / 16, 1, T));
#pragma omp parallel for num_threads(parts) if (parts > 1) schedule(static)
      for (int t = 0; t < parts; ++t) {
        const int64_t a = cc * t / parts, b = cc * (t + 1) / parts;
        channel_sums<kUnit>(x, n, c0 + a, c0 + b, shift + a, s1 + a, s2 + a);
      }
      // A group's mean m and its squared deviations, from each channel's shifted sums:
      // sum (x - m)^2 = s2 + 2 (shift - m) s1 + hw (shift - m)^2.
      for (int64_t g = 0; g < g1 - g0; ++g) {
        double total = 0.0;
        for (int64_t i = g * cg; i < (g + 1) * cg; ++i) total += shift[i] * hw + s1[i];
        const double m = total / count;
        double sq = 0.0;
        for (int64_t i = g * cg; i < (g + 1) * cg; ++i) {
          const double e = shift[i] - m;
          sq += s2[i] + 2.0 * e * s1[i] + hw * e * e;
        }
        const double inv = 1.0 / std::sqrt(std::max(sq, 0.0) / count + static_cast<double>(p.eps));
        for (int64_t i = g * cg; i < (g + 1) * cg; ++i) {
          centre[i] = m;
          scale[i] = inv;
        }
      }
      // y = (x - mean) * inv, then the affine (1 and 0 without one: exact) and SiLU, per position.
      for (int64_t i = 0; i < cc; ++i) {
        mul[i] = p.affine ? gamma->f32()[(c0 + i) * gamma->stride(0)] : 1.0f;
        add[i] = p.affine ? beta->f32()[(c0 + i) * beta->stride(0)] : 0.0f;
      }
      if constexpr (kUnit) {
#if GPEN_HAVE_AVX512_KERNELS
        auto row_fn = norm_wide() ? detail::isa_avx512::gn_apply_row : detail::isa_base::gn_apply_row;
#else
        auto row_fn = detail::isa_base::gn_apply_row;
#endif
#pragma omp parallel for num_threads(T) if (T > 1) schedule(static)
        for (int64_t h = 0; h < H; ++h)
          row_fn(y.f32() + n * y.stride(0) + h * y.stride(1) + c0, y.stride(2),
                 x.f32() + n * x.stride(0) + h * x.stride(1) + c0, x.stride(2), W, cc, centre, scale, mul, add, p.silu);
        continue;
      }
#pragma omp parallel for collapse(2) num_threads(T) if (T > 1) schedule(static)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          const float* xp = x.f32() + n * x.stride(0) + h * x.stride(1) + w * x.stride(2) + c0 * xc;
          float* yp = y.f32() + n * y.stride(0) + h * y.stride(1) + w * y.stride(2) + c0 * yc;
          if (p.silu) {
#pragma omp simd
            for (int64_t i = 0; i < cc; ++i)
              yp[i * yc] = silu_simd(static_cast<float>((static_cast<double>(xp[i * xc]) - centre[i]) * scale[i]) * mul[i] + add[i]);
          } else {
#pragma omp simd
            for (int64_t i = 0; i < cc; ++i)
              yp[i * yc] = static_cast<float>((static_cast<double>(xp[i * xc]) - centre[i]) * scale[i]) * mul[i] + add[i];
          }
        }
    }
}

}  // namespace

void group_norm(const GroupNormParams& p, const TensorView& x, const TensorView* gamma, const TensorView* beta,
                const TensorView& y) {
  detail::check_f32(x, "group_norm", "input");
  detail::check_f32(y, "group_norm", "output");
  detail::check_rank(x, 4, "group_norm", "input");
  detail::check_same_shape(x, y, "group_norm", "input", "output");
  const int64_t C = x.dim(3), G = p.groups;
  GPEN_CHECK(G > 0 && C % G == 0, "group_norm: " + std::to_string(C) + " channels of " + x.shape.str() +
                                      " do not split into " + std::to_string(G) + " groups");
  check_affine(gamma, beta, p.affine, C, "group_norm");
  if (x.numel() == 0) return;
  if (x.stride(3) == 1 && y.stride(3) == 1)
    group_norm_impl<true>(p, x, gamma, beta, y);
  else
    group_norm_impl<false>(p, x, gamma, beta, y);
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
