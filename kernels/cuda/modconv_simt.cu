// The modulated conv as an implicit GEMM on the CUDA cores in f32 (the f32 path; f16/bf16 use
// modconv_wmma.cu). See modconv.cuh for the GEMM and the fused prologue / epilogue.
//
// Tiling: 256 threads compute 64 pixels x 64 channels, thread (ty, tx) of the 16 x 16 grid a 4 x 4
// register tile (rows 4 ty.., columns 4 tx..). Depth steps of 16 with two shared-memory stages
// filled through registers as in the WMMA kernel (modconv_depth_loop: global loads of step k + 1
// are issued before the FMAs of step k). A is stored depth-major (a[k][m]) so the 4 A values of a
// thread are adjacent like its 4 B values. The epilogue runs straight from registers.
#include "kernels/cuda/modconv.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kThreads = 256;
constexpr int kBM = 64, kBN = 64, kBK = 16;
constexpr int kTM = 4, kTN = 4;
constexpr int kPad = 4;

template <class T, bool kVec>
__global__ void __launch_bounds__(kThreads) modconv_simt_kernel(const ModConvGeometry g, const ModConvTensors<T> t) {
  GPEN_SHARED(__align__(16) float, a_tile, [2][kBK][kBM + kPad]);
  GPEN_SHARED(__align__(16) float, b_tile, [2][kBK][kBN + kPad]);

  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const ModConvTile tile = modconv_tile(g, kBM, kBN);
  if (tile.empty()) return;  // block-uniform
  constexpr int kV = Vec16<T>::n;

  float acc[kTM][kTN] = {};
  modconv_depth_loop<kBM, kBN, kBK, kThreads, kVec>(
      g, t, tile,
      [&](int buf, int row, int col, const float (&v)[kV]) {
        for (int j = 0; j < kV; ++j) a_tile[buf][col + j][row] = v[j];
      },
      [&](int buf, int row, int col, const Vec16<T>& raw) {
        for (int j = 0; j < kV; ++j) b_tile[buf][row][col + j] = to_f32(raw.v[j]);
      },
      [&](int buf) {
#pragma unroll
        for (int kk = 0; kk < kBK; ++kk) {
          float a[kTM], b[kTN];
          for (int i = 0; i < kTM; ++i) a[i] = a_tile[buf][kk][ty * kTM + i];
          for (int j = 0; j < kTN; ++j) b[j] = b_tile[buf][kk][tx * kTN + j];
          for (int i = 0; i < kTM; ++i)
            for (int j = 0; j < kTN; ++j) acc[i][j] += a[i] * b[j];
        }
      });

  const int pixels = tile.ph.na * tile.ph.nb;
  for (int i = 0; i < kTM; ++i) {
    const int m = tile.m0 + ty * kTM + i;
    if (m >= pixels) break;
    int oy, ox;
    modconv_pixel(g, tile.ph, m, oy, ox);
    for (int j = 0; j < kTN; ++j) {
      const int co = tile.n0 + tx * kTN + j;
      if (co < g.cout) modconv_finish(g, t, tile.split, tile.n, oy, ox, co, acc[i][j]);
    }
  }
}

}  // namespace

template <class T>
void launch_modconv_simt(const ModConvGeometry& g, const ModConvTensors<T>& t, bool vec, Stream stream) {
  launch_modconv_tiles<kBM, kBN, kThreads>(vec ? modconv_simt_kernel<T, true> : modconv_simt_kernel<T, false>, g,
                                          t, stream);
}

template void launch_modconv_simt<float>(const ModConvGeometry&, const ModConvTensors<float>&, bool, Stream);

GPEN_CUDA_NAMESPACE_END
