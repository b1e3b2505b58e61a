// The emulator's checker (GPEN_CUDA_EMU_CHECK, docs/cuda.md "Checker") against planted bugs
// (tests/cuda_emu/planted.cu): every one must be reported, with its kind and, for memory
// errors, the source lines of the accesses; the correct controls must run clean.
// GPEN_EMULATOR_ONLY: the checker is part of the emulator, so the GPU bundle leaves this file out.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#if defined(GPEN_CUDA_EMU)
#include "tests/cuda_emu/planted.h"

namespace {

using cuda_planted::Bug;

struct Restore {
  ~Restore() {
    const char* env = std::getenv("GPEN_CUDA_EMU_CHECK");
    cuda_emu::set_checks(env ? env : "none");
  }
};

size_t count(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
  return n;
}

// Runs one planted bug under `checks`; returns the fault message (empty when it ran clean).
std::string fault_of(Bug bug, const char* checks) {
  cuda_emu::set_checks(checks);
  cuda_emu::clear_fault();
  const cudaError_t e = cuda_planted::run(bug);
  std::string msg = cuda_emu::last_fault();
  cuda_emu::clear_fault();
  (void)cudaGetLastError();
  if (e != cudaSuccess && e != cudaErrorLaunchFailure) msg = std::string("launch error ") + cudaGetErrorName(e);
  return msg;
}

// `parts`: alternatives separated by '|' (which one comes first depends on the schedule).
void expect_report(Bug bug, const char* checks, const std::string& parts, size_t lines) {
  const std::string msg = fault_of(bug, checks);
  INFO("checks " << std::string(checks) << ", report: " << msg);
  bool found = false;
  for (size_t at = 0; at <= parts.size();) {
    const size_t end = std::min(parts.find('|', at), parts.size());
    found = found || msg.find(parts.substr(at, end - at)) != std::string::npos;
    at = end + 1;
  }
  CHECK(found);
  // Memory reports name the planted lines: both accesses of a race, the one of other faults.
  CHECK(count(msg, "planted.cu:") >= lines);
}

}  // namespace

// The memory checks need the instrumented kernels (not in the ASan build, GPEN_CUDA_EMU_CHECKER).
#if defined(GPEN_CUDA_EMU_INSTRUMENTED)
TEST_CASE("checker: shared-memory races are reported with both source lines, whatever the schedule") {
  Restore restore;
  for (const char* checks : {"race", "race,sync"}) {
    expect_report(Bug::missing_barrier_raw, checks, "race on shared memory s", 2);
    expect_report(Bug::war_on_reuse, checks, "race on shared memory tile", 2);
    expect_report(Bug::waw, checks, "write-after-write race on shared memory s + 0", 2);
    expect_report(Bug::warp_lockstep_reduce, checks, "race on shared memory s", 2);
  }
  // With every check on, reading a neighbour's slot before it is written may show first as an
  // uninitialised read.
  expect_report(Bug::missing_barrier_raw, "all", "race on shared memory s|uninitialised shared memory s", 1);
  // The kernel name, block and both threads are named.
  const std::string msg = fault_of(Bug::missing_barrier_raw, "race");
  CHECK(msg.find("kernel missing_barrier_raw_kernel, block (") != std::string::npos);
  CHECK(count(msg, "thread (") == 2);
}

TEST_CASE("checker: global-memory races between blocks of one launch") {
  Restore restore;
  expect_report(Bug::cross_block_raw, "race", "race on global memory", 2);
  expect_report(Bug::cross_block_waw, "race", "write-after-write race on global memory", 2);
  const std::string msg = fault_of(Bug::cross_block_waw, "race");
  CHECK(msg.find("different blocks of one launch") != std::string::npos);
  CHECK(fault_of(Bug::clean_global_atomics, "race") == "");
}

TEST_CASE("checker: uninitialised and out-of-bounds shared memory") {
  Restore restore;
  expect_report(Bug::uninit_shared, "init", "uninitialised shared memory s + ", 1);
  expect_report(Bug::uninit_dynamic_shared, "init", "uninitialised shared memory dynamic shared memory + ", 1);
  expect_report(Bug::shared_out_of_bounds, "race", "out-of-bounds shared memory write", 1);
  expect_report(Bug::shared_out_of_bounds, "init", "out-of-bounds shared memory write", 1);
}

TEST_CASE("checker: reads of device memory never written since cudaMalloc (initcheck)") {
  Restore restore;
  expect_report(Bug::uninit_global, "init", "read of uninitialised global memory (allocation 0x", 1);
  CHECK(fault_of(Bug::uninit_global, "race") == "");  // only the init check looks for it
  CHECK(fault_of(Bug::clean_global_init, "init") == "");
  CHECK(fault_of(Bug::clean_global_init, "all") == "");
}

#endif  // GPEN_CUDA_EMU_INSTRUMENTED

TEST_CASE("checker: barrier and warp-synchronisation misuse") {
  Restore restore;
  expect_report(Bug::shuffle_exited_lane, "none", "which did not take part", 0);
  expect_report(Bug::mask_missing_lane, "none", "waits in __syncwarp (mask 0xffffffff) for lanes 0xffff0000", 0);
  expect_report(Bug::mask_exited_lane, "sync", "__ballot_sync: mask 0xffffffff names lanes 0x|exited while lanes 0x00", 0);
  expect_report(Bug::syncwarp_excludes_self, "none", "is not in mask 0x0000ffff", 0);
  expect_report(Bug::divergent_barrier, "none", "divergent __syncthreads", 0);
  expect_report(Bug::oversized_launch, "none", "launch error cudaErrorInvalidValue", 0);
  expect_report(Bug::too_many_threads, "none", "launch error cudaErrorInvalidConfiguration", 0);
}

TEST_CASE("checker: atomics and a __syncwarp-separated warp reduction run clean") {
  Restore restore;
  CHECK(fault_of(Bug::clean_atomics, "all") == "");
  CHECK(fault_of(Bug::clean_warp_reduce, "all") == "");
}
#endif
