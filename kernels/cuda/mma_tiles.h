#pragma once
// Which block tile the mma.sync GEMM kernels (modconv_mma.cu, conv2d_mma.cu) use for a GEMM
// shape, and which GEMM family runs (GPEN_CUDA_GEMM). Plain C++ (no CUDA headers): the planner's
// roofline (`gpen plan --device cuda --roofline`) uses the same choice without a GPU.
//
// GPEN's layers run from 4 x 4 pixels x 512 channels to 512 x 512 pixels x 32 channels:
//  - many pixels, few channels (cout <= 64, or enough 128-row tiles to fill the GPU): 128 x 64,
//    each B (weight) chunk feeds 128 rows;
//  - deep layers with many pixels (cout >= 256, at least one 64 x 128 tile per SM): 64 x 128,
//    each A (activation) chunk, the expensive one in modconv (prologue), feeds 128 channels;
//  - too few tiles to fill the GPU at 128 rows: 64 x 64, twice the blocks (split-K, chosen
//    from the shapes alone as for the WMMA kernels, adds depth chunks on top).
#include <cstdint>

namespace gpen::cuda_tiles {

constexpr int kMmaBK = 32;     // depth per pipeline stage
constexpr int kMmaStages = 3;  // cp.async stages in flight
constexpr int64_t kMmaFillBlocks = 264;  // two blocks per SM of an H100 / H200 (132 SMs)

struct MmaTile {
  int bm = 128, bn = 64;
};

// rows: GEMM rows per (sample, phase) grid slice; cout: columns; slices: samples x phases x groups.
inline MmaTile choose_mma_tile(int64_t rows, int64_t cout, int64_t slices) {
  auto tiles = [&](int64_t bm, int64_t bn) { return ((rows + bm - 1) / bm) * ((cout + bn - 1) / bn) * slices; };
  if (cout >= 256 && rows >= 1024 && tiles(64, 128) >= kMmaFillBlocks / 2) return {64, 128};
  if (cout <= 64 || tiles(128, 64) >= kMmaFillBlocks) return {128, 64};
  return {64, 64};
}

// The GEMM kernel family of the f16 / bf16 convolutions: the mma.sync + ldmatrix + cp.async
// kernels (default) or the WMMA reference kernels. Set by set_gemm_family (the CUDA backend from
// GPEN_CUDA_GEMM=mma|wmma, engine/runtime/env_options.h; tests, benchmarks). Shapes the mma kernels do not take (channel counts not
// multiples of 8, unaligned or strided channels) run on WMMA either way.
enum class GemmFamily { mma, wmma };

}  // namespace gpen::cuda_tiles
