#pragma once
// The CUDA backend's symbols live in gpen::cuda inside an inline namespace that says how they were
// built: `native` (nvcc, real GPU) or `emu` (compiled as C++ for the host emulator in
// tests/cuda_emu/). Code calls gpen::cuda::conv2d either way; the two builds can be linked into
// one executable (CUDA compiled in, tests emulated) without clashing symbols.
#if defined(GPEN_CUDA_EMU)
#define GPEN_CUDA_NAMESPACE_BEGIN \
  namespace gpen::cuda {          \
  inline namespace emu {
#else
#define GPEN_CUDA_NAMESPACE_BEGIN \
  namespace gpen::cuda {          \
  inline namespace native {
#endif
#define GPEN_CUDA_NAMESPACE_END \
  }                             \
  }
