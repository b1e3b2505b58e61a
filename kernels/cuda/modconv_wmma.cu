// The modulated conv as an implicit GEMM on tensor cores (WMMA 16x16x16, f16 / bf16 inputs, f32
// accumulation). See modconv.cuh for the GEMM (rows = output pixels of one sample and phase,
// depth = taps x input channels, prologue on A, epilogue on the output).
//
// Tiling: a block of 4 warps computes 128 pixels x 64 channels; warp (wm, wn) owns the 64 x 32
// sub-tile at (64 wm, 32 wn): 4 x 2 accumulator fragments, so each A fragment loaded from shared
// memory feeds two MMAs and each B fragment four. The depth is walked in steps of 32 with two
// shared-memory stages (modconv_depth_loop in modconv.cuh): the global loads of step k + 1 go to
// registers before the MMAs of step k are issued and land in the other stage after them, which
// hides most of the load latency with a single barrier per step and without cp.async (which the
// emulator lacks). The prologue (x * s, or act2(x2 * scale + bias) * s) runs in f32 between the
// two and is rounded once to T.
// Epilogue: the accumulators go through shared memory (which reuses the operand stages), then
// consecutive threads finish consecutive channels of a pixel.
//
// Rows of the shared tiles are padded by 8 halves / 4 floats: fragment pointers stay 32-byte
// aligned, ldm a multiple of 16 bytes, and the rows of a fragment spread over the banks.
#include "kernels/cuda/modconv.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kThreads = 128;
constexpr int kBM = 128, kBN = 64, kBK = 32;
constexpr int kPadAB = 8, kPadC = 4;

template <class T>
union WmmaSmem {
  struct {
    T a[2][kBM][kBK + kPadAB];
    T b[2][kBK][kBN + kPadAB];
  } ab;
  float c[kBM][kBN + kPadC];
};

// Three blocks per SM, except where that register budget (168) spills: bf16 with vector staging
// on sm_90 spilled 28 bytes (scripts/cuda_resources.py), so it gets two blocks' worth.
template <class T, bool kVec>
constexpr int modconv_wmma_min_blocks() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (std::is_same_v<T, __nv_bfloat16> && kVec) return 2;
#endif
  return 3;
}

template <class T, bool kVec>
__global__ void __launch_bounds__(kThreads, modconv_wmma_min_blocks<T, kVec>()) modconv_wmma_kernel(const ModConvGeometry g, const ModConvTensors<T> t) {
  using namespace nvcuda;
  GPEN_SHARED(__align__(32) WmmaSmem<T>, sm, );

  const int tid = threadIdx.x, warp = tid / 32;
  const int warp_m = warp / 2, warp_n = warp % 2;
  const ModConvTile tile = modconv_tile(g, kBM, kBN);
  if (tile.empty()) return;  // block-uniform
  constexpr int kV = Vec16<T>::n;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  modconv_depth_loop<kBM, kBN, kBK, kThreads, kVec>(
      g, t, tile,
      [&](int buf, int row, int col, const float (&v)[kV]) {
        Vec16<T> o;
        for (int j = 0; j < kV; ++j) o.v[j] = from_f32<T>(v[j]);
        *reinterpret_cast<Vec16<T>*>(&sm.ab.a[buf][row][col]) = o;
      },
      [&](int buf, int row, int col, const Vec16<T>& raw) {
        *reinterpret_cast<Vec16<T>*>(&sm.ab.b[buf][row][col]) = raw;
      },
      [&](int buf) {
#pragma unroll
        for (int kk = 0; kk < kBK; kk += 16) {
          wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a_frag[4];
          wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b_frag[2];
          for (int i = 0; i < 4; ++i)
            wmma::load_matrix_sync(a_frag[i], &sm.ab.a[buf][warp_m * 64 + i * 16][kk], kBK + kPadAB);
          for (int j = 0; j < 2; ++j)
            wmma::load_matrix_sync(b_frag[j], &sm.ab.b[buf][kk][warp_n * 32 + j * 16], kBN + kPadAB);
          for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a_frag[i], b_frag[j], acc[i][j]);
        }
      });

  // The C tile reuses the operand stages: every warp is past the loop's last barrier.
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(&sm.c[warp_m * 64 + i * 16][warp_n * 32 + j * 16], acc[i][j], kBN + kPadC,
                              wmma::mem_row_major);
  __syncthreads();
  const int pixels = tile.ph.na * tile.ph.nb;
  for (int e = tid; e < kBM * kBN; e += kThreads) {
    const int r = e / kBN, c = e % kBN;
    const int m = tile.m0 + r, co = tile.n0 + c;
    if (m >= pixels || co >= g.cout) continue;
    int oy, ox;
    modconv_pixel(g, tile.ph, m, oy, ox);
    modconv_finish(g, t, tile.split, tile.n, oy, ox, co, sm.c[r][c]);
  }
}

}  // namespace

template <class T>
void launch_modconv_wmma(const ModConvGeometry& g, const ModConvTensors<T>& t, bool vec, Stream stream) {
  launch_modconv_tiles<kBM, kBN, kThreads>(vec ? modconv_wmma_kernel<T, true> : modconv_wmma_kernel<T, false>, g,
                                          t, stream);
}

template void launch_modconv_wmma<__half>(const ModConvGeometry&, const ModConvTensors<__half>&, bool, Stream);
template void launch_modconv_wmma<__nv_bfloat16>(const ModConvGeometry&, const ModConvTensors<__nv_bfloat16>&, bool,
                                                 Stream);

GPEN_CUDA_NAMESPACE_END
