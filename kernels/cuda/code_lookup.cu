// The nearest codebook entry per feature vector, gathered, as cpu::code_lookup: one warp per
// pixel. Lane l looks at entries l, l + 32, ... keeping its first best, then a butterfly picks
// the best of the lanes, the lower index on equal values, so ties go to the first index as in
// torch.argmax / argmin. The VQ distances are summed in double in the CPU op's order (|z|^2, then
// per entry |e|^2 and z . e over the channels in turn) with explicit roundings (no fused
// multiply-adds), so both pick the same entries.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_transformer.h"
#include "kernels/cpu/transformer_shapes.h"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kWarpsPerBlock = 8;

struct LookupShape {
  int64_t n, h, w, k, c;
  bool argmax;
  NhwcStrides zs, ys;
  int64_t kr, kc, is_n, is_h, is_w;
};

template <class T>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    code_lookup_kernel(const LookupShape s, const T* z, const T* book, T* y, int32_t* idx) {
  const int lane = threadIdx.x % 32;
  const int64_t pixels = s.n * s.h * s.w;
  for (int64_t p = int64_t{blockIdx.x} * kWarpsPerBlock + threadIdx.x / 32; p < pixels;
       p += int64_t{gridDim.x} * kWarpsPerBlock) {
    const int64_t x = p % s.w, yy = (p / s.w) % s.h, n = p / (s.w * s.h);
    const T* zp = z + n * s.zs.n + yy * s.zs.h + x * s.zs.w;
    // Lane-local best as a score to maximise: the logit, or minus the distance.
    double best = -INFINITY;
    int64_t best_k = s.k;
    if (s.argmax) {
      for (int64_t k = lane; k < s.k; k += 32) {
        const double v = to_f32(zp[k * s.zs.c]);
        if (best_k == s.k || v > best) best = v, best_k = k;
      }
    } else {
      double zz = 0.0;
      for (int64_t c = 0; c < s.c; ++c) {
        const double v = to_f32(zp[c * s.zs.c]);
        zz = __dadd_rn(zz, __dmul_rn(v, v));
      }
      for (int64_t k = lane; k < s.k; k += 32) {
        const T* e = book + k * s.kr;
        double ee = 0.0, ze = 0.0;
        for (int64_t c = 0; c < s.c; ++c) {
          const double ev = to_f32(e[c * s.kc]);
          ee = __dadd_rn(ee, __dmul_rn(ev, ev));
          ze = __dadd_rn(ze, __dmul_rn(to_f32(zp[c * s.zs.c]), ev));
        }
        const double v = -__dadd_rn(__dadd_rn(zz, ee), -__dmul_rn(2.0, ze));
        if (best_k == s.k || v > best) best = v, best_k = k;
      }
    }
    for (int off = 16; off > 0; off >>= 1) {
      const double ob = __shfl_xor_sync(0xffffffffu, best, off);
      const int64_t ok = __shfl_xor_sync(0xffffffffu, best_k, off);
      if (ok < s.k && (best_k == s.k || ob > best || (ob == best && ok < best_k))) best = ob, best_k = ok;
    }
    if (lane == 0) idx[n * s.is_n + yy * s.is_h + x * s.is_w] = static_cast<int32_t>(best_k);
    T* yp = y + n * s.ys.n + yy * s.ys.h + x * s.ys.w;
    for (int64_t c = lane; c < s.c; c += 32) yp[c * s.ys.c] = book[best_k * s.kr + c * s.kc];
  }
}

}  // namespace

void code_lookup(const CodeLookupParams& p, const TensorView& z, const TensorView& codebook, const TensorView& y,
                 const TensorView& indices, Stream stream) {
  check_view(z, z.dtype, "code_lookup", "input");
  check_view(codebook, z.dtype, "code_lookup", "codebook");
  check_view(y, z.dtype, "code_lookup", "output");
  kernels::check_code_lookup_shapes(p, z, codebook, y, indices);
  const int64_t N = z.dim(0), H = z.dim(1), W = z.dim(2), K = codebook.dim(0), C = codebook.dim(1);
  const bool argmax = p.mode == CodeLookup::argmax;
  if (N * H * W == 0) return;
  const LookupShape s{N, H, W, K, C, argmax, nhwc_strides(z), nhwc_strides(y), codebook.stride(0), codebook.stride(1),
                      indices.stride(0), indices.stride(1), indices.stride(2)};
  dispatch_float(z.dtype, "code_lookup", [&](auto tag) {
    using T = typename decltype(tag)::type;
    GPEN_LAUNCH(grid_for(N * H * W, kWarpsPerBlock), kWarpsPerBlock * 32, 0, stream, code_lookup_kernel<T>)(
        s, z.as<const T>(), codebook.as<const T>(), y.as<T>(), indices.as<int32_t>());
  });
  check_launch("code_lookup");
}

GPEN_CUDA_NAMESPACE_END
