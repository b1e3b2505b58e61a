#pragma once
// Dynamic scheduling that keeps each thread on the same part of a tensor from one op to the next.
//
// Tasks [0, n) are split into one contiguous range per thread; thread t runs its own range front
// to back and, when it is done, takes what is left of the other ranges from their back ends. A
// thread thus works on the same region (the same rows of the same tile blocks) in every op that
// orders its tasks by position, so the data one op writes is mostly read by the same core in the
// next: on a machine whose two cores are far apart (a VM's vCPUs on different CCDs, where one
// cache line's round trip took 300-350 ns against 50-80 ns near), OpenMP's dynamic schedule,
// which deals tasks out by arrival, made every op read half its input from the other core's
// cache (docs/benchmarks.md, far-apart cores). Stealing from the back keeps the balance of the dynamic
// schedule. Each task's result does not depend on which thread runs it, so the bits are the same.
#include <atomic>
#include <cstdint>
#include <string>

#include "engine/core/error.h"

namespace gpen::cpu {

class RangeSteal {
 public:
  static constexpr int kMaxRanges = 64;  // more threads share the ranges (and steal)

  // Call once before the parallel region (or in an `omp single`), with the threads asked for: a
  // smaller team still runs every task (the missing threads' ranges are stolen).
  void reset(int64_t n, int threads) {
    // A range packs its front and back into 32 bits each.
    GPEN_CHECK(n >= 0 && n < (int64_t{1} << 32), "range steal: " + std::to_string(n) + " tasks do not fit 32 bits");
    nr_ = threads < 1 ? 1 : threads > kMaxRanges ? kMaxRanges : threads;
    for (int r = 0; r < nr_; ++r) {
      const uint64_t f = static_cast<uint64_t>(n * r / nr_), b = static_cast<uint64_t>(n * (r + 1) / nr_);
      r_[r].fb.store(f | b << 32, std::memory_order_relaxed);
    }
  }

  // The next task for thread t (omp_get_thread_num()), or -1 when none is left.
  int64_t next(int t) {
    const int own = t % nr_;
    int64_t task = pop(own, false);
    for (int k = 1; task < 0 && k < nr_; ++k) task = pop((own + k) % nr_, true);
    return task;
  }

 private:
  // front in the low 32 bits, back (one past the last) in the high 32.
  struct alignas(64) Range {
    std::atomic<uint64_t> fb{0};
  };

  int64_t pop(int r, bool from_back) {
    uint64_t v = r_[r].fb.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t f = v & 0xffffffffu, b = v >> 32;
      if (f >= b) return -1;
      const uint64_t w = from_back ? f | (b - 1) << 32 : (f + 1) | b << 32;
      if (r_[r].fb.compare_exchange_weak(v, w, std::memory_order_relaxed)) return static_cast<int64_t>(from_back ? b - 1 : f);
    }
  }

  Range r_[kMaxRanges];
  int nr_ = 1;
};

}  // namespace gpen::cpu
