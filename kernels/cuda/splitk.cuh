#pragma once
// Split-K for the implicit-GEMM convolutions whose output is too small to fill the GPU: GPEN's
// 4x4 to 16x16 layers at batch 1 have 512 channels and up to 9216 depth but only 8 to 32 output
// tiles, so most SMs would idle while a few blocks walk the whole depth. With a split, block s
// sums depth chunk s into its own f32 slice of the workspace; a second pass adds the slices in
// order (so the result is deterministic) and runs the op's epilogue.
//
// The split depends only on the shapes, so the planner knows the workspace before anything runs
// and a GPU is not needed to plan. The constants are a starting point to tune on a real GPU.
#include <algorithm>
#include <cstdint>
#include <string>

#include "kernels/cuda/common.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

// Blocks to aim for: about two per SM of an H100 / H200 (132 SMs).
constexpr int64_t kSplitKTargetBlocks = 256;
// Least depth per split (a multiple of every kernel's depth step, 16 and 32): below that the
// partial sums cost more traffic than the split saves.
constexpr int64_t kSplitKMinDepth = 128;
constexpr int64_t kSplitKMax = 16;
// Most workspace the partial sums of one op may take: memory is the product, so a split that
// would need more is made coarser (or dropped). 2 MiB keeps the deepest splits for the 4x4 to
// 16x16 layers, where they matter most, and adds at most 2 MiB to a plan.
constexpr int64_t kSplitKMaxBytes = int64_t{2} << 20;

struct SplitK {
  int splits = 1;  // depth chunks
  int chunk = 0;   // depth per chunk (a multiple of kSplitKMinDepth when splits > 1)
};

// `tiles`: blocks of the unsplit launch; `depth`: the GEMM depth; `output_bytes`: one split's
// partial sums (outputs x 4). `max_splits` bounds the grid's z extent the split multiplies.
inline SplitK choose_split_k(int64_t tiles, int64_t depth, int64_t output_bytes, int64_t max_splits = kSplitKMax) {
  SplitK s;
  s.chunk = static_cast<int>(depth);
  if (tiles <= 0 || tiles >= kSplitKTargetBlocks || output_bytes <= 0) return s;
  const int64_t want = std::min({ceil_div(kSplitKTargetBlocks, tiles), depth / kSplitKMinDepth, kSplitKMax,
                                 max_splits, kSplitKMaxBytes / output_bytes});
  if (want < 2) return s;
  const int64_t chunk = ceil_div(ceil_div(depth, want), kSplitKMinDepth) * kSplitKMinDepth;
  s.splits = static_cast<int>(ceil_div(depth, chunk));
  s.chunk = static_cast<int>(chunk);
  if (s.splits < 2) s = SplitK{1, static_cast<int>(depth)};
  return s;  // splits <= want, so splits * output_bytes <= kSplitKMaxBytes
}

// Workspace of a split over `outputs` results: one f32 slice per split (0 without a split).
inline size_t split_k_workspace_bytes(const SplitK& s, int64_t outputs) {
  return s.splits > 1 ? static_cast<size_t>(s.splits) * static_cast<size_t>(outputs) * sizeof(float) : 0;
}

// A split cannot run without its workspace (the message is built only when it is missing).
inline void require_split_k_workspace(const SplitK& s, const void* workspace, const char* op, const Shape& x,
                                      const Shape& y) {
  GPEN_CHECK(s.splits == 1 || workspace != nullptr,
             std::string(op) + ": " + x.str() + " -> " + y.str() + " splits its depth " + std::to_string(s.splits) +
                 " ways and needs " + op + "_workspace_bytes of workspace, got none");
}

// The second pass: out(i) for each of `count` outputs, with the partial sums of split s at
// partial[s * count + i], added in split order.
template <class Finish>
__global__ void __launch_bounds__(256) split_k_reduce_kernel(int64_t count, int splits, const float* partial, Finish finish) {
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    float acc = partial[i];
    for (int s = 1; s < splits; ++s) acc += partial[s * count + i];
    finish(i, acc);
  }
}

// Queues the second pass after the GEMM launch (checked first, so a failure names the right one).
template <class Finish>
void launch_split_k_reduce(const char* op, int64_t count, int splits, const float* partial, const Finish& finish,
                           Stream stream) {
  check_launch(op);
  GPEN_LAUNCH(grid_for(count, 256), 256, 0, stream, split_k_reduce_kernel<Finish>)(count, splits, partial, finish);
}

GPEN_CUDA_NAMESPACE_END
