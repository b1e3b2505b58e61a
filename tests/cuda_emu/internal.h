#pragma once
// Between the emulator's runtime (runtime.cpp) and its scheduler (scheduler.cpp); not for kernels.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cuda_emu.h"

namespace cuda_emu::internal {

// Limits of the emulated device (an sm_80-class part).
constexpr int kMaxThreadsPerBlock = 1024;
constexpr size_t kDefaultDynamicSmem = 48 * 1024;
constexpr size_t kMaxDynamicSmemOptin = 163 * 1024;

void set_last_error(cudaError_t e);
// The sticky error left by a kernel fault (cudaSuccess if none).
cudaError_t sticky_error();
// Records a kernel fault: prints it, makes cudaErrorLaunchFailure sticky and the last error.
void record_fault(const std::string& message);
bool stream_valid(cudaStream_t s);
size_t max_dynamic_smem(const void* fn);
// The cudaMalloc / cudaMallocHost allocation holding p: [lo, hi); false if none.
bool allocation_range(const void* p, uintptr_t& lo, uintptr_t& hi, bool* pinned = nullptr);

}  // namespace cuda_emu::internal
