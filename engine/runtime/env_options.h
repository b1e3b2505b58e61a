#pragma once
// The one place that reads the engine's documented environment variables (the kernels never do).
// The GPEN_CPU_* ones go into the cpu::CpuOptions a CPU backend is made with
// (kernels/cpu/cpu_options.h):
//   GPEN_CPU_CONV=auto|direct|winograd|winograd4|winograd2   the 3x3 conv rule's mode
//   GPEN_CPU_CONV1X1=own|eigen                                conv2d's own 1x1 / tap GEMM, or Eigen's
//   GPEN_CPU_WINO_FUSED=1|0                                   the fused small-image Winograd forms
//   GPEN_CPU_FAR=auto|0|1                                     far-apart cores: measured, never, always
//   GPEN_CPU_HUGEPAGES=0                                      no huge-page advice for the arena and weights
//   GPEN_CPU_ISA=avx2|avx512                                  the kernels' ISA (process-wide: cpu::use_isa)
// Read once per process, at the first call; a value outside these throws gpen::Error naming the
// variable. Unset (or empty) means the default, the first of each list (GPEN_CPU_ISA: the widest
// the CPU has).
//
// GPEN_CUDA_GEMM=mma|wmma: the GEMM family of the f16 / bf16 CUDA convolutions
// (kernels/cuda/ops_gemm.h), applied when a CUDA backend is made; unset: the kernels' own (mma).
#include <optional>

#include "kernels/cpu/cpu_options.h"
#include "kernels/cuda/mma_tiles.h"

namespace gpen {

const cpu::CpuOptions& cpu_options_from_env();
// The same in the low-memory mode (`--memory-budget`, docs/memory.md): weights read where their
// file is mapped, no Winograd, the modconv's weight tile by tile, and no huge-page copy of the
// weights (nor an arena rounded up to 2 MiB pages).
cpu::CpuOptions low_memory_cpu_options();
std::optional<cuda_tiles::GemmFamily> cuda_gemm_family_from_env();

}  // namespace gpen
