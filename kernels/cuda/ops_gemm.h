#pragma once
// The GEMM kernel family of the f16 / bf16 conv2d and modconv calls (kernels/cuda/mma_tiles.h):
// mma.sync + ldmatrix + cp.async (default) or the WMMA reference kernels. set_gemm_family sets it:
// the CUDA backend, from GPEN_CUDA_GEMM=mma|wmma (engine/runtime/env_options.h), and tests.
// Process-wide; not to be changed while kernels are being queued on another thread.
#include "kernels/cuda/abi.h"
#include "kernels/cuda/mma_tiles.h"

GPEN_CUDA_NAMESPACE_BEGIN

using GemmFamily = ::gpen::cuda_tiles::GemmFamily;

GemmFamily gemm_family();
void set_gemm_family(GemmFamily f);
const char* gemm_family_name(GemmFamily f);
// "mma" or "wmma"; throws gpen::Error naming GPEN_CUDA_GEMM for anything else.
GemmFamily parse_gemm_family(const char* name);

// The mma kernels' block tile for a GEMM (cuda_tiles::choose_mma_tile unless overridden).
// set_mma_tile_override({bm, bn}) forces one of 128 x 64, 64 x 64, 64 x 128 (tests: every tile
// on small shapes); {0, 0} restores the automatic choice.
cuda_tiles::MmaTile mma_tile(int64_t rows, int64_t cout, int64_t slices);
void set_mma_tile_override(cuda_tiles::MmaTile t);

GPEN_CUDA_NAMESPACE_END
