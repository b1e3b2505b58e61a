#pragma once
// Between the scheduler and the checker (checker.cpp); not for kernels.
//
// Shared memory of a block lives in one arena per OS thread: the dynamic shared memory first,
// then every static GPEN_SHARED array, each followed by a red zone. The arena is poisoned (0xff)
// at every block start. Under GPEN_CUDA_EMU_CHECK the checker also keeps a shadow record per
// arena byte (last writer, first reader since the last barrier, written or not) and is told,
// through the ThreadSanitizer compiler pass's callbacks (tsan_hooks.cpp), of every load and store
// the kernels make (see docs/cuda.md, "Checker").
#include <cstddef>
#include <cstdint>
#include <string>

#include "cuda_emu.h"

namespace cuda_emu::check {

// The checks GPEN_CUDA_EMU_CHECK enables (parsed once).
struct Flags {
  bool race = false, sync = false, init = false;
  bool any() const { return race || sync || init; }
  bool memory() const { return race || init; }
};
const Flags& flags();

// The schedule seed from GPEN_CUDA_EMU_SEED (0: the plain round-robin order).
uint64_t schedule_seed();
// " (schedule seed N, replay with GPEN_CUDA_EMU_SEED=N)" when a seed is set, else "".
std::string seed_note();

// Per OS thread: starts a block with `nthreads` threads and `dynamic_bytes` of dynamic shared
// memory; fault receives a message when the shared memory does not fit.
void block_begin(const LaunchConfig& cfg, uint3 bid, unsigned nthreads);
void block_end();
// The running emulated thread (linear index in its block) and its fiber stack, or none (-1).
void set_thread(int linear, const void* stack = nullptr, size_t stack_bytes = 0);
// A __syncthreads completed: every access before it is ordered before every access after it.
void barrier();
// A warp operation completed for the lanes `members` of warp `warp`.
void warp_sync(unsigned warp, unsigned members);
void* dynamic_smem_base();
void* static_smem(const void* key, size_t bytes, const char* name);
// The first report of the running block ("" if none); the scheduler turns it into the fault.
const std::string& report();
// "file:line (function) <- callers" of a code address recorded by access() (reports only).
std::string code_location(int32_t pc);
// Global memory (checker_global.cpp): the shadow is per launch.
struct GlobalWho {
  unsigned tid, block;  // linear indices
  uint32_t epoch;
  uint16_t wc, lane_gen;  // warp operations of the warp so far; the caller's last one
  dim3 bdim, gdim;
};
void global_launch_begin();
// Device memory written or dropped outside kernels (runtime.cpp), for GPEN_CUDA_EMU_CHECK=init:
// a kernel read of a device byte that no copy, memset or kernel has written since cudaMalloc is
// reported. Host memory (cudaMallocHost) is written by host code the checker cannot see: never
// reported. Calls for addresses outside device allocations are ignored.
void global_allocated(const void* base, size_t bytes);
void global_released(const void* base);
void global_written(const void* p, size_t n);
// A report, or "" (also for addresses outside device allocations).
std::string global_access(const void* p, size_t n, bool write, bool atomic, int32_t pc, const GlobalWho& who);
// cp.async (ptx_emu.h) of the running thread: `data` (n <= 16 bytes, already read from global
// memory, zero-filled) is to land at the shared address dst. Until the thread's wait_group
// completes its group the destination holds poison (0xff) and, under the memory checks, any
// access of it is reported; at completion it counts as the issuing thread's write in the epoch of
// the wait (other threads need a __syncthreads before reading it). `ret`: the issuing code.
// Whether [p, p + n) lies inside the block's shared-memory arrays (or their red zones).
bool shared_range(const void* p, size_t n);
void async_copy(void* dst, const void* data, size_t n, const void* ret);
// cp.async.commit_group: the thread's uncommitted copies become its newest group.
void async_commit();
// cp.async.wait_group n: completes all but the thread's n newest committed groups.
void async_wait(int n);
// One load or store (or atomic) of `n` bytes at p by instrumented code; ret: its code address.
void access(const void* p, size_t n, bool write, bool atomic, const void* ret);

}  // namespace cuda_emu::check
