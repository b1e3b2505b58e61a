#pragma once
// Shared by the conv2d kernels (conv2d_*.cu) and their dispatcher (conv2d.cu): the geometry of one
// call, the tensors, and the epilogue every kernel ends with.
//
// Every conv2d kernel is an implicit GEMM per group g:
//   rows    m = (n, oy, ox)            M = N * Ho * Wo output pixels
//   columns co in [0, cout_g)          output channels of the group
//   depth   k = (ky * kw + kx) * cin_g + ci
//   A[m][k] = x[n, oy*sh - pt + ky, ox*sw - pl + kx, g*cin_g + ci]   (zero outside the image)
//   B[k][co] = w[ky][kx][ci][g*cout_g + co]   (HWIO is exactly this row-major matrix, row
//                                              stride cout)
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/weights8.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

struct ConvGeometry {
  int n = 0, h = 0, w = 0, cin = 0;
  int ho = 0, wo = 0, cout = 0;
  int kh = 1, kw = 1, stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0;
  int groups = 1, cin_g = 0, cout_g = 0;
  int m = 0;  // GEMM rows: n * ho * wo
  int k = 0;  // GEMM depth: kh * kw * cin_g
  // Split-K (splitk.cuh): grid z = group * splits + split; split s sums depth
  // [s * kchunk, min(k, (s + 1) * kchunk)).
  int splits = 1, kchunk = 0;
  NhwcStrides xs, ys, rs;
  int64_t bias_stride = 0;
  Activation act;
};

template <class T>
struct ConvTensors {
  const T* x = nullptr;
  const T* w = nullptr;
  const T* bias = nullptr;      // optional
  const T* residual = nullptr;  // optional
  T* y = nullptr;
  float* partial = nullptr;     // split-K: [splits][m][cout] raw sums (the workspace)
  Weight8 w8{};                 // 8-bit weight (w is null then): see weights8.cuh
};

// B[k][co] of group `group` as f32 (co counted within the group): the T weight, or the 8-bit one
// dequantised and rounded to T, so that a kernel sees the value a T weight file would hold.
template <class T>
__device__ __forceinline__ float conv_weight_at(const ConvGeometry& g, const ConvTensors<T>& t, int group, int k,
                                                int co) {
  const int oc = group * g.cout_g + co;
  const int64_t i = int64_t{k} * g.cout + oc;
  return t.w8.codes ? to_f32(from_f32<T>(weight8_at(t.w8, i, k, oc))) : to_f32(t.w[i]);
}

// y[m, co] = act(acc + bias[co]) + residual[m, co], co counted over all groups.
template <class T>
__device__ __forceinline__ void conv_store(const ConvGeometry& g, const ConvTensors<T>& t, int m, int co, float acc) {
  const int ox = m % g.wo, rest = m / g.wo;
  const int oy = rest % g.ho, n = rest / g.ho;
  float v = acc;
  if (t.bias) v += to_f32(t.bias[co * g.bias_stride]);
  v = activate(g.act, v);
  if (t.residual) v += to_f32(t.residual[n * g.rs.n + oy * g.rs.h + ox * g.rs.w + co * g.rs.c]);
  t.y[n * g.ys.n + oy * g.ys.h + ox * g.ys.w + co * g.ys.c] = from_f32<T>(v);
}

// The end of a block's GEMM for output (m, co): the epilogue, or under split-K the raw sum into
// the split's slice of the partial sums (the reduction pass runs the epilogue).
template <class T>
__device__ __forceinline__ void conv_finish(const ConvGeometry& g, const ConvTensors<T>& t, int split, int m, int co,
                                           float acc) {
  if (g.splits > 1)
    t.partial[(int64_t{split} * g.m + m) * g.cout + co] = acc;
  else
    conv_store(g, t, m, co, acc);
}

// Launchers, one per kernel file. T: __half / __nv_bfloat16 for the tensor-core kernel; float,
// __half, __nv_bfloat16 for the others.
template <class T>
void launch_conv2d_wmma(const ConvGeometry& g, const ConvTensors<T>& t, Stream stream);
// The mma.sync kernel (conv2d_mma.cu) and the shapes it takes (channel multiples of 8, aligned).
template <class T>
void launch_conv2d_mma(const ConvGeometry& g, const ConvTensors<T>& t, Stream stream);
bool conv2d_mma_supported(const ConvGeometry& g, const void* x, const void* w);
template <class T>
void launch_conv2d_simt(const ConvGeometry& g, const ConvTensors<T>& t, Stream stream);
template <class T>
void launch_conv2d_depthwise(const ConvGeometry& g, const ConvTensors<T>& t, Stream stream);

GPEN_CUDA_NAMESPACE_END
