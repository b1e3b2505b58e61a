#pragma once
// The settings the CPU kernels run under, in one value: made once where a CPU backend is created
// (engine/runtime/env_options.h reads the documented GPEN_CPU_* variables into it, the only place
// that reads them) and handed to what needs it. The kernels never read the environment.
#include <cstdint>

#include "kernels/cpu/core_distance.h"
#include "kernels/cpu/isa.h"

namespace gpen::cpu {

// GPEN_CPU_CONV: which 3x3 convs run as Winograd (kernels/cpu/conv_select.h has the rule).
enum class ConvMode : uint8_t {
  automatic,  // "auto" (default): Winograd where the rule measured it faster
  direct,     // "direct": never
  winograd4,  // "winograd" / "winograd4": F(4x4) on every 3x3 conv a Winograd form takes
  winograd2,  // "winograd2": F(2x2) on every one
};
const char* conv_mode_name(ConvMode m);

struct CpuOptions {
  ConvMode conv = ConvMode::automatic;  // GPEN_CPU_CONV
  bool own_gemm = true;                 // GPEN_CPU_CONV1X1=own (default) | eigen: conv2d's own 1x1 / tap GEMM
  bool wino_fused = true;               // GPEN_CPU_WINO_FUSED=1 (default) | 0: the fused small-image Winograd forms
  FarMode far = FarMode::measure;       // GPEN_CPU_FAR=auto (default) | 0 | 1 (core_distance.h)
  bool huge_pages = true;               // GPEN_CPU_HUGEPAGES=0 turns the huge-page advice off (the CPU backend)
  // The low-memory mode (`--memory-budget`, docs/memory.md): no Winograd (its transformed weight is
  // a layer's worth of workspace) and the modconv reads its weight operand tile by tile (8-bit
  // codes dequantised per tile: ConvChoice::weight_tiles), so no op holds a whole layer's f32 weight.
  bool low_memory = false;
  // The ISA the conv rule chooses for: the one the kernels run (cpuid, or GPEN_CPU_ISA through
  // engine/runtime/env_options.h); a test may ask about the other.
  Isa isa = cpu_isa();
};

}  // namespace gpen::cpu
