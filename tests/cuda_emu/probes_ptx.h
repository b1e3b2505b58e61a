#pragma once
// Probe kernels for the PTX layer (kernels/cuda/ptx.cuh), tests/test_cuda_ptx.cpp: each pins down
// a fragment layout or the cp.async semantics with inputs whose every result is exact, so the
// emulator's answer and the GPU's (a native run of the same test) must both equal the host's.
// Pointers are device pointers; each call returns cudaGetLastError() after its launch.
#include <cstdint>

#include "kernels/cuda/compat.h"

namespace cuda_probes {

// One warp: the A (16 x 16, row-major), B (16 x 8, row-major [k][n]) and C (16 x 8 f32) fragments
// are built element by element from the ISA's layout table (no ldmatrix), D = A B + C is stored
// back by the same table into d (16 x 8 row-major). half: f16 inputs, else bf16 (values given as
// f32, exactly representable).
cudaError_t mma_layout(bool half, const float* a, const float* b, const float* c, float* d);

// One warp, ldmatrix of N = 1, 2, 4 matrices (trans or not) from a 32 x 8 shared tile of 16-bit
// words holding s * 8 + col at storage row s; lane l passes the address of storage row
// (7 l) % 32. out[l * 4 + i] = register i of lane l (i < N; the rest 0).
cudaError_t ldmatrix_rows(int n, bool trans, uint32_t* out);

// One warp, the GEMM path of the fast kernels: A (16 x 16) and B ([k][n] 16 x 16) copied to padded
// shared tiles, A by ldmatrix.x4, B by ldmatrix.x4.trans (two n8 tiles), two mma.sync f16 ->
// d (16 x 16 f32 row-major) = A B.
cudaError_t mma_ldmatrix_gemm(const __half* a, const __half* b, float* d);

// 64 threads: thread t copies 16 bytes from src + 16 t to shared with src-size t % 17, then a
// second group from src + 1024 + 16 t (size 16); wait_group 1 -> out[16 t ..] the first copy's
// bytes (the rest zero-filled); wait_group 0, __syncthreads -> out[1024 + 16 t ..] the second
// copy of thread 63 - t.
cudaError_t cp_async_groups(const unsigned char* src, unsigned char* out);

}  // namespace cuda_probes
