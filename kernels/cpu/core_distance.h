#pragma once
// How far apart the first two threads of the CPU team run, measured at the start of each graph run.
//
// A VM's two vCPUs may sit on one CCD (a cache line's round trip between them 50-80 ns on the AMD
// EPYC VMs of docs/benchmarks.md) or on two (300-350 ns), and the host moves them within seconds
// (bench/core_distance.c times the same round trip from outside). Far apart, every store to a line
// the other core holds waits for that core: a blur that writes into arena memory the other thread
// wrote in an earlier op ran 3-4x slower (docs/benchmarks.md, far-apart cores). Streaming stores do
// not wait, but near they cost the next op its reads from the cache. So memory-bound ops ask
// cores_far() and stream where it says far (upfirdn2d.cpp). Where a store goes changes no value:
// the results are the same bits either way.
//
// probe_cores() times a few round trips of one cache line between threads 0 and 1 of an OpenMP
// team of num_threads() (a few microseconds a run); fewer than two threads, or a probe that
// does not finish within kProbeTimeoutNs (threads sharing a CPU), read near. The mode
// (CpuOptions::far, from GPEN_CPU_FAR) may override the measurement: never far, or always.
#include <cstdint>

namespace gpen::cpu {

constexpr double kFarRoundTripNs = 200.0;        // far from here (near < 150 on the VMs measured)
constexpr int64_t kProbeTimeoutNs = 200 * 1000;  // a thread waiting this long gives the probe up

enum class FarMode : uint8_t { measure, never, always };

void probe_cores(FarMode mode = FarMode::measure);
bool cores_far();
// The last probe's round trip in ns (0: none, or not measured: one thread, overridden, timed out).
double last_core_round_trip_ns();

}  // namespace gpen::cpu
