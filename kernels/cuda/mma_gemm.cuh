#pragma once
// The core of the mma.sync GEMM kernels (modconv_mma.cu, conv2d_mma.cu): shared tiles, the
// cp.async pipeline and the warp tile, on the PTX layer (ptx.cuh).
//
// A block of 4 warps (2 x 2) computes BM x BN; warp (wm, wn) owns (BM / 2) x (BN / 2), i.e.
// MI x NJ m16n8 accumulators (f32 registers, ISA layout: c[0..1] row g, c[2..3] row g + 8,
// columns 2t, 2t + 1 of the n8 tile). The depth is walked in steps of kBK = 32 through kStages = 3
// shared stages filled by cp.async (16-byte chunks, zero-fill for taps outside the image and
// depth past the end): the copies of step s + 2 are in flight while step s is multiplied, one
// __syncthreads per step. Fragments come from the tiles by ldmatrix: A (row-major [m][k]) by x4,
// B (k-major [k][n], the HWIO weight's own layout) by x4.trans, two n8 tiles at a time.
//
// Tiles are padded, not swizzled: A rows are kBK + 8 halves (80 bytes) and B rows BN + 8 halves
// apart, so the eight 16-byte rows of each 8 x 8 matrix an ldmatrix reads fall in eight different
// bank quads (80 = 20 banks: rows at banks 0, 20, 8, 28, 16, 4, 24, 12; BN + 8 = 72 or 136 halves:
// 4 banks apart), and every row start stays 16-byte aligned for cp.async and ldmatrix.
#include "kernels/cuda/ptx.cuh"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/mma_tiles.h"

GPEN_CUDA_NAMESPACE_BEGIN

namespace mma {

constexpr int kThreads = 128;
constexpr int kBK = cuda_tiles::kMmaBK;
constexpr int kStages = cuda_tiles::kMmaStages;
constexpr int kPad = 8;

template <class T, int BM, int BN>
struct Smem {
  T a[kStages][BM][kBK + kPad];
  T b[kStages][kBK][BN + kPad];
};

// The stages, and after the depth loop the f32 C tile of the epilogue in the same bytes.
template <class T, int BM, int BN>
union SmemC {
  Smem<T, BM, BN> ab;
  float c[BM][BN + 4];  // + 4: the fragment stores of a warp spread over the banks
};

// Bytes of static shared memory a tile takes (the 48 KiB static limit holds for every shape used).
template <int BM, int BN>
constexpr int smem_bytes() {
  return kStages * (BM * (kBK + kPad) + kBK * (BN + kPad)) * 2;
}
static_assert(smem_bytes<128, 64>() <= 48 * 1024 && smem_bytes<64, 128>() <= 48 * 1024, "static smem limit");
static_assert(sizeof(SmemC<__half, 128, 64>) == sizeof(Smem<__half, 128, 64>) &&
                  sizeof(SmemC<__half, 64, 64>) == sizeof(Smem<__half, 64, 64>) &&
                  sizeof(SmemC<__half, 64, 128>) == sizeof(Smem<__half, 64, 128>),
              "the C tile fits in the stages");

template <int BM, int BN>
struct WarpTile {
  static constexpr int WM = BM / 2, WN = BN / 2;
  static constexpr int MI = WM / 16, NJ = WN / 8;
  static_assert(MI >= 1 && NJ >= 2 && NJ % 2 == 0, "warp tile must hold whole m16 and pairs of n8 tiles");
  float acc[MI][NJ][4];

  __device__ __forceinline__ void zero() {
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NJ; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;
  }

  // Multiplies stage `s` of the tiles into the accumulators (both k16 halves of the step).
  template <class T>
  __device__ __forceinline__ void mma_stage(const Smem<T, BM, BN>& sm, int s, int wm, int wn) {
    const int lane = threadIdx.x % 32, mat = lane / 8, r = lane % 8;
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      uint32_t a[MI][4], b[NJ][2];
#pragma unroll
      for (int i = 0; i < MI; ++i)
        gpen_ptx::ldmatrix<4>(a[i], &sm.a[s][wm * WM + i * 16 + (mat & 1) * 8 + r][kk + (mat >> 1) * 8]);
#pragma unroll
      for (int j = 0; j < NJ; j += 2) {
        uint32_t q[4];
        gpen_ptx::ldmatrix<4, true>(q, &sm.b[s][kk + (mat & 1) * 8 + r][wn * WN + j * 8 + (mat >> 1) * 8]);
        b[j][0] = q[0], b[j][1] = q[1], b[j + 1][0] = q[2], b[j + 1][1] = q[3];
      }
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NJ; ++j) gpen_ptx::mma_m16n8k16<T>(acc[i][j], a[i], b[j], acc[i][j]);
    }
  }

  // Calls f(row, col, value) for every accumulator element, (row, col) within the block tile.
  template <class F>
  __device__ __forceinline__ void for_each(int wm, int wn, F&& f) const {
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NJ; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q)
          f(wm * WM + i * 16 + g + (q >= 2 ? 8 : 0), wn * WN + j * 8 + 2 * t + (q & 1), acc[i][j][q]);
  }
};

// The pipelined depth loop: `steps` depth steps; issue(step, stage) starts the cp.async copies
// of a step into a stage (this thread's chunks), ready(step, stage) runs after this thread's
// copies of the step have landed and before the barrier that publishes them (modconv applies
// its prologue there, in place, to its own chunks); then the warp tile multiplies the stage.
// Each step commits exactly one group (possibly empty), so wait_group kStages - 2 always means
// "this step's group is complete".
template <class T, int BM, int BN, class Issue, class Ready>
__device__ __forceinline__ void pipeline(Smem<T, BM, BN>& sm, WarpTile<BM, BN>& wt, int steps, Issue&& issue,
                                         Ready&& ready) {
  const int warp = threadIdx.x / 32, wm = warp / 2, wn = warp % 2;
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < steps) issue(s, s);
    gpen_ptx::cp_async_commit();
  }
  for (int step = 0; step < steps; ++step) {
    const int stage = step % kStages;
    gpen_ptx::cp_async_wait<kStages - 2>();
    ready(step, stage);
    // Publishes this step's stage, and every warp is past the MMAs of step - 1, whose stage the
    // next issue refills.
    __syncthreads();
    const int next = step + kStages - 1;
    if (next < steps) issue(next, next % kStages);
    gpen_ptx::cp_async_commit();
    wt.mma_stage(sm, stage, wm, wn);
  }
  gpen_ptx::cp_async_wait<0>();  // only empty groups are left; nothing in flight at the epilogue
}

// The epilogue: the accumulators go to the C tile (which reuses the stages: every warp is past
// its last MMA at the first barrier), then consecutive threads finish consecutive channels of a
// row, f(row, col, value), in a rolled loop: one copy of the epilogue's code instead of one per
// accumulator element (unrolled over 64 elements the fused epilogues made each kernel instance
// ~300 KB of SASS), and coalesced stores.
template <class T, int BM, int BN, class F>
__device__ __forceinline__ void epilogue(SmemC<T, BM, BN>& sm, const WarpTile<BM, BN>& wt, F&& f) {
  const int warp = threadIdx.x / 32;
  __syncthreads();
  wt.for_each(warp / 2, warp % 2, [&](int r, int c, float v) { sm.c[r][c] = v; });
  __syncthreads();
#pragma unroll 1
  for (int e = threadIdx.x; e < BM * BN; e += kThreads) f(e / BN, e % BN, sm.c[e / BN][e % BN]);
}

}  // namespace mma

GPEN_CUDA_NAMESPACE_END
