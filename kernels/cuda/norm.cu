// GroupNorm (NHWC, optionally + SiLU) and LayerNorm, as cpu::group_norm / cpu::layer_norm, in f32:
// the mean first, then the mean squared deviation (the two-pass form of the CPU op, which sums in
// double; the f32 sums here differ from it by a few ulp of the statistics).
//  - group_norm: one block per (sample, group); the block's threads stride over the group's
//    H x W x C / groups elements, channels fastest, and reduce through shared memory.
//  - layer_norm: one warp per row, as the softmax.
//  - adain: one block per (sample, channel), the statistics of the content and of the style
//    each reduced over their positions the same way.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_transformer.h"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kBlock = 256;
constexpr int kWarpsPerBlock = 8;

__device__ __forceinline__ float silu(float v) { return v / (1.0f + expf(-v)); }

// Sum over the block; every thread gets the result. `red` holds one float per warp.
__device__ float block_sum(float v, float* red) {
  v = warp_sum(v);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float t = 0.0f;
  for (int i = 0; i < kBlock / 32; ++i) t += red[i];
  __syncthreads();  // red is reused by the next reduction
  return t;
}

struct GnShape {
  int64_t h, w, c, cg;
  int groups;
  float eps;
  bool silu;
  NhwcStrides xs, ys;
  int64_t gs, bs;
};

template <class T>
__global__ void __launch_bounds__(kBlock) group_norm_kernel(const GnShape s, const T* x, const T* gamma, const T* beta, T* y) {
  GPEN_SHARED(float, red, [kBlock / 32]);
  const int64_t n = blockIdx.x / s.groups, c0 = int64_t{blockIdx.x % s.groups} * s.cg;
  const int64_t count = s.h * s.w * s.cg;
  auto at = [&](int64_t i, const NhwcStrides& st) {
    const int64_t c = c0 + i % s.cg, p = i / s.cg;
    return n * st.n + (p / s.w) * st.h + (p % s.w) * st.w + c * st.c;
  };
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < count; i += kBlock) sum += to_f32(x[at(i, s.xs)]);
  const float mean = block_sum(sum, red) / static_cast<float>(count);
  float sq = 0.0f;
  for (int64_t i = threadIdx.x; i < count; i += kBlock) {
    const float d = to_f32(x[at(i, s.xs)]) - mean;
    sq += d * d;
  }
  const float inv = rsqrtf(block_sum(sq, red) / static_cast<float>(count) + s.eps);
  for (int64_t i = threadIdx.x; i < count; i += kBlock) {
    float v = (to_f32(x[at(i, s.xs)]) - mean) * inv;
    const int64_t c = c0 + i % s.cg;
    if (gamma) v = v * to_f32(gamma[c * s.gs]) + to_f32(beta[c * s.bs]);
    y[at(i, s.ys)] = from_f32<T>(s.silu ? silu(v) : v);
  }
}

struct LnArgs {
  float eps;
  int64_t gs, bs;
};

template <class T>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    layer_norm_kernel(int64_t rows, RowMap<2> map, const T* x, T* y, const T* gamma, const T* beta, const LnArgs a) {
  const int64_t xs = map.col_stride[0], ys = map.col_stride[1], L = map.cols;
  for_each_warp_row<kWarpsPerBlock>(rows, map, x, y, [&](int lane, const T* xr, T* yr) {
    float sum = 0.0f;
    for (int64_t c = lane; c < L; c += 32) sum += to_f32(xr[c * xs]);
    const float mean = warp_sum(sum) / static_cast<float>(L);
    float sq = 0.0f;
    for (int64_t c = lane; c < L; c += 32) {
      const float d = to_f32(xr[c * xs]) - mean;
      sq += d * d;
    }
    const float inv = rsqrtf(warp_sum(sq) / static_cast<float>(L) + a.eps);
    for (int64_t c = lane; c < L; c += 32) {
      float v = (to_f32(xr[c * xs]) - mean) * inv;
      if (gamma) v = v * to_f32(gamma[c * a.gs]) + to_f32(beta[c * a.bs]);
      yr[c * ys] = from_f32<T>(v);
    }
  });
}

struct AdainShape {
  int64_t c;
  int64_t xp, sp;  // positions of the content and of the style
  int64_t xw, sw;  // their widths
  float eps;
  NhwcStrides xs, ss, ys;
};

// Mean and unbiased variance over `count` positions of one channel, read through at(i).
template <class At>
__device__ void channel_stats(int64_t count, At at, float* red, float& mean, float& var) {
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < count; i += kBlock) sum += at(i);
  mean = block_sum(sum, red) / static_cast<float>(count);
  float sq = 0.0f;
  for (int64_t i = threadIdx.x; i < count; i += kBlock) {
    const float d = at(i) - mean;
    sq += d * d;
  }
  var = block_sum(sq, red) / static_cast<float>(count - 1);
}

template <class T>
__global__ void __launch_bounds__(kBlock) adain_kernel(const AdainShape s, const T* x, const T* style, T* y) {
  GPEN_SHARED(float, red, [kBlock / 32]);
  const int64_t n = blockIdx.x / s.c, c = blockIdx.x % s.c;
  auto off = [&](int64_t i, int64_t w, const NhwcStrides& st) {
    return n * st.n + (i / w) * st.h + (i % w) * st.w + c * st.c;
  };
  float xm, xv, sm, sv;
  channel_stats(s.xp, [&](int64_t i) { return to_f32(x[off(i, s.xw, s.xs)]); }, red, xm, xv);
  channel_stats(s.sp, [&](int64_t i) { return to_f32(style[off(i, s.sw, s.ss)]); }, red, sm, sv);
  const float gain = sqrtf(sv + s.eps) / sqrtf(xv + s.eps);
  for (int64_t i = threadIdx.x; i < s.xp; i += kBlock)
    y[off(i, s.xw, s.ys)] = from_f32<T>((to_f32(x[off(i, s.xw, s.xs)]) - xm) * gain + sm);
}

void check_affine(bool affine, const TensorView* gamma, const TensorView* beta, int64_t C, DType dt, const char* op) {
  GPEN_CHECK(affine == (gamma != nullptr && beta != nullptr),
             std::string(op) + ": affine needs gamma and beta, and only with affine");
  if (!affine) return;
  check_view(*gamma, dt, op, "gamma");
  check_view(*beta, dt, op, "beta");
  GPEN_CHECK(gamma->shape == Shape{C} && beta->shape == Shape{C},
             std::string(op) + ": gamma " + gamma->shape.str() + " and beta " + beta->shape.str() + " must be [" +
                 std::to_string(C) + "]");
}

}  // namespace

void group_norm(const GroupNormParams& p, const TensorView& x, const TensorView* gamma, const TensorView* beta,
                const TensorView& y, Stream stream) {
  check_view(x, x.dtype, "group_norm", "input");
  check_view(y, x.dtype, "group_norm", "output");
  check_rank(x, 4, "group_norm", "input");
  check_same_shape(x, y, "group_norm", "input", "output");
  const int64_t C = x.dim(3);
  GPEN_CHECK(p.groups > 0 && C % p.groups == 0, "group_norm: " + std::to_string(C) + " channels of " + x.shape.str() +
                                                    " do not split into " + std::to_string(p.groups) + " groups");
  check_affine(p.affine, gamma, beta, C, x.dtype, "group_norm");
  if (x.numel() == 0) return;
  const GnShape s{x.dim(1),         x.dim(2),         C, C / p.groups, p.groups, p.eps, p.silu, nhwc_strides(x),
                  nhwc_strides(y), gamma ? gamma->stride(0) : 0, beta ? beta->stride(0) : 0};
  dispatch_float(x.dtype, "group_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    GPEN_LAUNCH(static_cast<unsigned>(x.dim(0) * p.groups), kBlock, 0, stream, group_norm_kernel<T>)(
        s, x.as<const T>(), gamma ? gamma->as<const T>() : nullptr, beta ? beta->as<const T>() : nullptr, y.as<T>());
  });
  check_launch("group_norm");
}

void layer_norm(const LayerNormParams& p, const TensorView& x, const TensorView* gamma, const TensorView* beta,
                const TensorView& y, Stream stream) {
  check_view(x, x.dtype, "layer_norm", "input");
  check_view(y, x.dtype, "layer_norm", "output");
  check_same_shape(x, y, "layer_norm", "input", "output");
  GPEN_CHECK(x.rank() >= 1, "layer_norm: input must have at least one axis");
  check_affine(p.affine, gamma, beta, x.dim(x.rank() - 1), x.dtype, "layer_norm");
  if (x.numel() == 0) return;
  const RowMap<2> map = make_row_map<2>({&x, &y});
  const int64_t rows = x.numel() / map.cols;
  const LnArgs a{p.eps, gamma ? gamma->stride(0) : 0, beta ? beta->stride(0) : 0};
  dispatch_float(x.dtype, "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    GPEN_LAUNCH(grid_for(rows, kWarpsPerBlock), kWarpsPerBlock * 32, 0, stream, layer_norm_kernel<T>)(
        rows, map, x.as<const T>(), y.as<T>(), gamma ? gamma->as<const T>() : nullptr,
        beta ? beta->as<const T>() : nullptr, a);
  });
  check_launch("layer_norm");
}

void adain(const AdaInParams& p, const TensorView& x, const TensorView& style, const TensorView& y, Stream stream) {
  check_view(x, x.dtype, "adain", "input");
  check_view(style, x.dtype, "adain", "style");
  check_view(y, x.dtype, "adain", "output");
  check_rank(x, 4, "adain", "input");
  check_rank(style, 4, "adain", "style");
  check_same_shape(x, y, "adain", "input", "output");
  const int64_t N = x.dim(0), C = x.dim(3), xp = x.dim(1) * x.dim(2), sp = style.dim(1) * style.dim(2);
  GPEN_CHECK(style.dim(0) == N && style.dim(3) == C && xp >= 2 && sp >= 2,
             "adain: input " + x.shape.str() + " and style " + style.shape.str() +
                 " need the same N and C and at least two positions each");
  if (x.numel() == 0) return;
  const AdainShape s{C, xp, sp, x.dim(2), style.dim(2), p.eps, nhwc_strides(x), nhwc_strides(style), nhwc_strides(y)};
  dispatch_float(x.dtype, "adain", [&](auto tag) {
    using T = typename decltype(tag)::type;
    GPEN_LAUNCH(static_cast<unsigned>(N * C), kBlock, 0, stream, adain_kernel<T>)(s, x.as<const T>(),
                                                                                   style.as<const T>(), y.as<T>());
  });
  check_launch("adain");
}

GPEN_CUDA_NAMESPACE_END
