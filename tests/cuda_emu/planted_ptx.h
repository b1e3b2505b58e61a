#pragma once
// Planted bugs in code on the PTX layer (kernels/cuda/ptx.cuh), for tests/test_cuda_ptx_checker.cpp
// (emulator only): each kernel misuses cp.async or ldmatrix once; the checker must report it
// (the read-before-wait ones also without the checks, as a wrong answer: the destination holds
// poison until the wait). run() launches one on buffers it allocates and returns
// cudaGetLastError(); `out` receives 64 words from thread t at out[t] when it ran.
#include "kernels/cuda/compat.h"

namespace cuda_planted_ptx {

enum class Bug {
  read_before_wait,      // a thread reads its own cp.async destination before wait_group
  wait_too_shallow,      // wait_group 1 with the data in the newest group
  no_barrier_after_wait, // waits for its own copy, reads a neighbour's without __syncthreads
  stage_reuse_war,       // cp.async into a stage other threads still read (no barrier between)
  ldmatrix_misaligned,   // a row address 2 bytes past a 16-byte boundary
  ldmatrix_wrong_row,    // row addresses one tile too far: past the shared array
  ldmatrix_partial_warp, // half the warp skips the ldmatrix
  clean_pipeline,        // control: two-stage cp.async pipeline with the waits and barriers
};
cudaError_t run(Bug bug, int* out_host = nullptr);

}  // namespace cuda_planted_ptx
