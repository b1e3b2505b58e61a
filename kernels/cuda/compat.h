#pragma once
// What every kernels/cuda/*.cu includes first. Kernels are written once and compile two ways:
//  - with nvcc: the real CUDA headers; GPEN_LAUNCH is a triple-chevron launch;
//  - as C++ with GPEN_CUDA_EMU defined: tests/cuda_emu/cuda_emu.h provides the same names on the
//    host (threads as fibers, __shared__ per block, warp operations, WMMA), and GPEN_LAUNCH hands
//    the kernel to the emulator. Kernels therefore avoid inline PTX and stick to the subset the
//    emulator implements (see docs/cuda.md).
//
// Launch: GPEN_LAUNCH(grid, block, dynamic_smem_bytes, stream, kernel)(args...);
// the kernel comes last so that a template-id with commas needs no parentheses.
// Static shared memory: GPEN_SHARED(T, name, dims); declares `__shared__ T name dims` (the
// emulator places it in the block's checked arena; a plain __shared__ does not compile there).
// Dynamic shared memory: GPEN_DYNAMIC_SMEM(T, name); declares `T* name`.
#if defined(GPEN_CUDA_EMU)

#include "tests/cuda_emu/cuda_emu.h"

#define GPEN_LAUNCH(grid, block, smem, stream, ...) \
  ::cuda_emu::make_launcher((grid), (block), (smem), (stream), #__VA_ARGS__, __VA_ARGS__)

#else

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#if defined(__CUDACC__)
#include <mma.h>
#endif

#define GPEN_LAUNCH(grid, block, smem, stream, ...) __VA_ARGS__<<<(grid), (block), (smem), (stream)>>>
#define GPEN_SHARED(T, name, dims) __shared__ T name dims
#define GPEN_DYNAMIC_SMEM(T, name)                                 \
  extern __shared__ __align__(128) unsigned char gpen_dynamic_smem_[]; \
  T* name = reinterpret_cast<T*>(gpen_dynamic_smem_)

#endif
