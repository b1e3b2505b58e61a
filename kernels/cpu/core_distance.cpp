#include "kernels/cpu/core_distance.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>

#include "kernels/cpu/ops.h"

namespace gpen::cpu {

namespace {

constexpr int kRoundTrips = 8;
constexpr int kWarmup = 2;

std::atomic<bool> g_far{false};
std::atomic<double> g_ns{0.0};

// The spin-wait hint of the CPU (x86: pause; aarch64: yield).
inline void spin_pause() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Thread 0 and thread 1 take turns on one line: thread 0 writes an odd value and waits for thread 1
// to answer with the next even one. The mean round trip after the warm-up, or -1 when either gives
// up (the other thread is not running: both on one CPU).
double ping_pong() {
  alignas(64) std::atomic<int> line{0};
  std::atomic<bool> gave_up{false};
  double ns = -1.0;
#pragma omp parallel num_threads(2)
  {
    const int me = omp_get_thread_num();
    if (omp_get_num_threads() == 2) {
      int64_t t0 = 0;
      for (int i = 0; i < kWarmup + kRoundTrips && !gave_up.load(std::memory_order_relaxed); ++i) {
        if (me == 0 && i == kWarmup) t0 = now_ns();
        const int want = 2 * i + (me == 0 ? 2 : 1);
        if (me == 0) line.store(2 * i + 1, std::memory_order_release);
        const int64_t start = now_ns();
        for (int spin = 0; line.load(std::memory_order_acquire) != want; ++spin) {
          spin_pause();
          if (gave_up.load(std::memory_order_relaxed)) break;
          if (spin % 64 == 63 && now_ns() - start > kProbeTimeoutNs) gave_up.store(true, std::memory_order_relaxed);
        }
        if (gave_up.load(std::memory_order_relaxed)) break;
        if (me == 1) line.store(want + 1, std::memory_order_release);
      }
      if (me == 0 && !gave_up.load(std::memory_order_relaxed)) ns = double(now_ns() - t0) / kRoundTrips;
    }
  }
  return gave_up.load() ? -1.0 : ns;
}

}  // namespace

void probe_cores(FarMode mode) {
  if (mode != FarMode::measure || num_threads() < 2) {
    g_far.store(mode == FarMode::always, std::memory_order_relaxed);
    g_ns.store(0.0, std::memory_order_relaxed);
    return;
  }
  const double ns = ping_pong();
  g_far.store(ns > kFarRoundTripNs, std::memory_order_relaxed);
  g_ns.store(std::max(ns, 0.0), std::memory_order_relaxed);
}

bool cores_far() { return g_far.load(std::memory_order_relaxed); }

double last_core_round_trip_ns() { return g_ns.load(std::memory_order_relaxed); }

}  // namespace gpen::cpu
