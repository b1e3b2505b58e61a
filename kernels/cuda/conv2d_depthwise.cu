// Depthwise conv2d (groups == cin == cout): each output channel reads only its own input channel,
// so there is no reduction over channels to share and a GEMM would waste its tiles. One thread
// per output element, channels fastest: a warp reads 32 consecutive channels of one input pixel
// per tap (coalesced) and the HWIO weight [kh][kw][1][c] the same way. f32 accumulation.
#include "kernels/cuda/conv2d.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kThreads = 256;

template <class T>
__global__ void __launch_bounds__(kThreads) conv2d_depthwise_kernel(const ConvGeometry g, const ConvTensors<T> t) {
  const int64_t total = int64_t{g.m} * g.cout;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int c = static_cast<int>(i % g.cout);
    const int m = static_cast<int>(i / g.cout);
    const int ox = m % g.wo, rest = m / g.wo;
    const int oy = rest % g.ho, n = rest / g.ho;
    const T* xc = t.x + n * g.xs.n + c * g.xs.c;
    float acc = 0.0f;
    for (int ky = 0; ky < g.kh; ++ky) {
      const int iy = oy * g.stride_h - g.pad_top + ky;
      if (iy < 0 || iy >= g.h) continue;
      for (int kx = 0; kx < g.kw; ++kx) {
        const int ix = ox * g.stride_w - g.pad_left + kx;
        if (ix < 0 || ix >= g.w) continue;
        acc += to_f32(xc[iy * g.xs.h + ix * g.xs.w]) * to_f32(t.w[int64_t{ky * g.kw + kx} * g.cout + c]);
      }
    }
    conv_store(g, t, m, c, acc);
  }
}

}  // namespace

template <class T>
void launch_conv2d_depthwise(const ConvGeometry& g, const ConvTensors<T>& t, Stream stream) {
  GPEN_LAUNCH(grid_for(int64_t{g.m} * g.cout, kThreads), kThreads, 0, stream, conv2d_depthwise_kernel<T>)(g, t);
}

template void launch_conv2d_depthwise<float>(const ConvGeometry&, const ConvTensors<float>&, Stream);
template void launch_conv2d_depthwise<__half>(const ConvGeometry&, const ConvTensors<__half>&, Stream);
template void launch_conv2d_depthwise<__nv_bfloat16>(const ConvGeometry&, const ConvTensors<__nv_bfloat16>&, Stream);

GPEN_CUDA_NAMESPACE_END
