#pragma once
// Kernels with one planted bug each, for the checker's tests (tests/test_cuda_checker.cpp,
// emulator only). Each entry launches its kernel once (32..128 threads, 1..4 blocks) on device
// buffers it allocates itself and returns cudaGetLastError() after the launch.
#include "kernels/cuda/compat.h"

namespace cuda_planted {

enum class Bug {
  missing_barrier_raw,     // a thread reads its neighbour's shared slot with no __syncthreads
  war_on_reuse,            // the next tile overwrites a buffer other threads still read
  waw,                     // every thread writes the same shared word
  warp_lockstep_reduce,    // tree reduction in one warp without __syncwarp
  uninit_shared,           // reads a shared slot no thread wrote
  uninit_dynamic_shared,   // reads dynamic shared memory no thread wrote
  shared_out_of_bounds,    // writes one element past a shared array
  shuffle_exited_lane,     // shuffles from a lane that returned
  mask_missing_lane,       // __syncwarp names lanes that wait at __syncthreads instead
  mask_exited_lane,        // a vote's mask names lanes that returned (sync check)
  syncwarp_excludes_self,  // __syncwarp with a mask that leaves out the caller
  divergent_barrier,       // __syncthreads inside a branch half the block skips
  cross_block_raw,         // a block reads what another block of the same launch wrote
  cross_block_waw,         // every block writes the same global word
  uninit_global,           // reads device memory nothing wrote since cudaMalloc
  oversized_launch,        // 64 KiB of dynamic shared memory without the opt-in
  too_many_threads,        // 2048 threads per block
  // Controls: correct kernels that must run clean.
  clean_atomics,           // every thread atomicAdds the same shared word, then a barrier
  clean_warp_reduce,       // the warp reduction with __syncwarp between the steps
  clean_global_atomics,    // every block atomicAdds the same global word
  clean_global_init,       // reads device memory a cudaMemset wrote
};
cudaError_t run(Bug bug);

}  // namespace cuda_planted
