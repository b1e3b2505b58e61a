// conv2d on the GPU: argument checks, the geometry, and the choice of kernel.
//  - depthwise (groups == cin == cout > 1): conv2d_depthwise.cu, a direct loop per output;
//  - f16 / bf16: implicit GEMM on tensor cores with f32 accumulation: conv2d_mma.cu (mma.sync,
//    ldmatrix, cp.async; the default, GPEN_CUDA_GEMM=mma) where the shape and alignment allow
//    and the weights are not 8-bit, else conv2d_wmma.cu (WMMA; GPEN_CUDA_GEMM=wmma forces it);
//  - f32: conv2d_simt.cu, implicit GEMM on the CUDA cores in f32.
// All of them end in the same fused epilogue (bias, activation, residual) and write through the
// output's strides, so a conv can fill a channel slice of a concatenation buffer.
#include <climits>

#include "kernels/cuda/conv2d.cuh"
#include "kernels/cuda/ops_gemm.h"
#include "kernels/cuda/splitk.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

ConvGeometry make_geometry(const Conv2dParams& p, const Shape& x, const Shape& y) {
  GPEN_CHECK(x.rank == 4, "conv2d: input must be NHWC (rank 4), got " + x.str());
  GPEN_CHECK(y.rank == 4, "conv2d: output must be NHWC (rank 4), got " + y.str());
  GPEN_CHECK(p.kh >= 1 && p.kw >= 1, "conv2d: kernel size must be positive");
  GPEN_CHECK(p.stride_h >= 1 && p.stride_w >= 1, "conv2d: strides must be positive");
  GPEN_CHECK(p.pad_top >= 0 && p.pad_left >= 0 && p.pad_bottom >= 0 && p.pad_right >= 0,
             "conv2d: paddings must be non-negative");
  GPEN_CHECK(p.groups >= 1 && p.groups <= 65535, "conv2d: groups must be in 1..65535, got " + std::to_string(p.groups));
  for (int i = 0; i < 4; ++i)
    GPEN_CHECK(fits_int(x[i]) && fits_int(y[i]), "conv2d: dimensions of " + x.str() + " -> " + y.str() + " too large");
  ConvGeometry g;
  g.n = static_cast<int>(x[0]), g.h = static_cast<int>(x[1]), g.w = static_cast<int>(x[2]);
  g.cin = static_cast<int>(x[3]);
  g.ho = static_cast<int>(y[1]), g.wo = static_cast<int>(y[2]), g.cout = static_cast<int>(y[3]);
  g.kh = p.kh, g.kw = p.kw, g.stride_h = p.stride_h, g.stride_w = p.stride_w;
  g.pad_top = p.pad_top, g.pad_left = p.pad_left;
  g.groups = p.groups;
  GPEN_CHECK(g.cin % g.groups == 0 && g.cout % g.groups == 0,
             "conv2d: channels " + std::to_string(g.cin) + " -> " + std::to_string(g.cout) +
                 " not divisible by groups " + std::to_string(g.groups));
  g.cin_g = g.cin / g.groups, g.cout_g = g.cout / g.groups;
  const int64_t hp = int64_t{g.h} + p.pad_top + p.pad_bottom, wp = int64_t{g.w} + p.pad_left + p.pad_right;
  GPEN_CHECK(hp >= p.kh && wp >= p.kw, "conv2d: kernel larger than padded input " + x.str());
  const int64_t ho = (hp - p.kh) / p.stride_h + 1, wo = (wp - p.kw) / p.stride_w + 1;
  GPEN_CHECK(y[0] == g.n && g.ho == ho && g.wo == wo,
             "conv2d: output shape " + y.str() + " does not match input " + x.str() + " (expected [" +
                 std::to_string(g.n) + ", " + std::to_string(ho) + ", " + std::to_string(wo) + ", C])");
  const int64_t m = int64_t{g.n} * g.ho * g.wo, k = int64_t{p.kh} * p.kw * g.cin_g;
  GPEN_CHECK(fits_int(m) && fits_int(k), "conv2d: " + x.str() + " -> " + y.str() + " is too large for one call");
  g.m = static_cast<int>(m), g.k = static_cast<int>(k);
  return g;
}

// The GEMM kernels' split of the depth (both tile 64 x 64 per group); never for depthwise shapes,
// whose depth (kh * kw) is far below a split's minimum anyway.
// A band of a larger output splits as the whole output does (Conv2dParams::split_rows).
SplitK conv_split(const ConvGeometry& g, const Conv2dParams& p) {
  const int64_t m = p.split_rows > 0 ? int64_t{g.n} * p.split_rows * g.wo : int64_t{g.m};
  const int64_t tiles = ceil_div(m, 64) * ceil_div(g.cout_g, 64) * g.groups;
  return choose_split_k(tiles, g.k, m * g.cout * 4, 65535 / g.groups);
}

template <class T>
struct ConvSplitFinish {
  ConvGeometry g;
  ConvTensors<T> t;
  __device__ void operator()(int64_t i, float acc) const {
    conv_store(g, t, static_cast<int>(i / g.cout), static_cast<int>(i % g.cout), acc);
  }
};

}  // namespace

size_t conv2d_workspace_bytes(const Conv2dParams& p, const Shape& x, const Shape& y) {
  const ConvGeometry g = make_geometry(p, x, y);
  return split_k_workspace_bytes(conv_split(g, p), int64_t{g.m} * g.cout);
}

void conv2d(const Conv2dParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
            const TensorView* residual, const TensorView& y, void* workspace, Stream stream, ConvAlgo algo) {
  check_view(x, x.dtype, "conv2d", "input");
  const Weight8 w8 = weight8_of(w, "conv2d");  // 8-bit weights: any activation dtype
  if (!w8.codes) check_view(w, x.dtype, "conv2d", "weight");
  check_view(y, x.dtype, "conv2d", "output");
  ConvGeometry g = make_geometry(p, x.shape, y.shape);
  check_rank(w, 4, "conv2d", "weight");
  GPEN_CHECK(w.dim(0) == p.kh && w.dim(1) == p.kw && w.dim(2) == g.cin_g && w.dim(3) == g.cout,
             "conv2d: weight shape " + w.shape.str() + " is not HWIO [" + std::to_string(p.kh) + ", " +
                 std::to_string(p.kw) + ", " + std::to_string(g.cin_g) + ", " + std::to_string(g.cout) + "]");
  GPEN_CHECK(w.contiguous(), "conv2d: the weight must be contiguous HWIO");
  GPEN_CHECK(p.has_bias == (bias != nullptr), "conv2d: has_bias does not match the bias argument");
  GPEN_CHECK(p.has_residual == (residual != nullptr), "conv2d: has_residual does not match the residual argument");
  if (bias) {
    check_view(*bias, x.dtype, "conv2d", "bias");
    GPEN_CHECK(bias->rank() == 1 && bias->dim(0) == g.cout,
               "conv2d: bias shape " + bias->shape.str() + " must be [" + std::to_string(g.cout) + "]");
  }
  if (residual) {
    check_view(*residual, x.dtype, "conv2d", "residual");
    check_same_shape(*residual, y, "conv2d", "residual", "output");
  }
  const bool depthwise_shape = g.cin_g == 1 && g.cout_g == 1;
  if (algo == ConvAlgo::automatic)
    algo = depthwise_shape ? ConvAlgo::depthwise : x.dtype == DType::f32 ? ConvAlgo::simt : ConvAlgo::tensor_core;
  GPEN_CHECK(algo != ConvAlgo::depthwise || depthwise_shape,
             "conv2d: the depthwise kernel needs groups == cin == cout, got groups " + std::to_string(g.groups) +
                 " for " + std::to_string(g.cin) + " -> " + std::to_string(g.cout));
  GPEN_CHECK(algo != ConvAlgo::tensor_core || x.dtype != DType::f32,
             "conv2d: the tensor-core kernel takes f16 or bf16, got f32");
  GPEN_CHECK(!w8.codes || algo != ConvAlgo::depthwise, "conv2d: 8-bit weights are not supported by depthwise convs");
  if (int64_t{g.m} * g.cout == 0) return;

  g.xs = nhwc_strides(x);
  g.ys = nhwc_strides(y);
  if (residual) g.rs = nhwc_strides(*residual);
  g.bias_stride = bias ? bias->stride(0) : 0;
  // act(conv + bias + residual): the kernels' epilogue adds the residual after the activation,
  // so they run without it and the activation follows as bias_act's pass (in place).
  const bool act_last = p.act_after_residual && residual && !p.act.is_identity();
  g.act = act_last ? Activation::none() : p.act;
  if (algo != ConvAlgo::depthwise) {
    const SplitK sk = conv_split(g, p);
    g.splits = sk.splits;
    g.kchunk = sk.chunk;
    require_split_k_workspace(sk, workspace, "conv2d", x.shape, y.shape);
  }
  dispatch_float(x.dtype, "conv2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    ConvTensors<T> t{x.as<const T>(), w8.codes ? nullptr : w.as<const T>(), bias ? bias->as<const T>() : nullptr,
                     residual ? residual->as<const T>() : nullptr, y.as<T>()};
    t.w8 = w8;
    if (g.splits > 1) t.partial = static_cast<float*>(workspace);
    if (algo == ConvAlgo::depthwise) {
      launch_conv2d_depthwise<T>(g, t, stream);
    } else if (algo == ConvAlgo::simt) {
      launch_conv2d_simt<T>(g, t, stream);
    } else if constexpr (!std::is_same_v<T, float>) {
      // 8-bit weights are dequantised by the WMMA kernels' B staging; the mma kernels read T only.
      if (gemm_family() == GemmFamily::mma && !w8.codes && conv2d_mma_supported(g, x.data, w.data))
        launch_conv2d_mma<T>(g, t, stream);
      else
        launch_conv2d_wmma<T>(g, t, stream);
    }
    if (g.splits > 1)
      launch_split_k_reduce("conv2d", int64_t{g.m} * g.cout, g.splits, t.partial, ConvSplitFinish<T>{g, t}, stream);
  });
  check_launch("conv2d");
  if (act_last) bias_act(BiasActParams{false, p.act}, y, nullptr, y, stream);
}

GPEN_CUDA_NAMESPACE_END
