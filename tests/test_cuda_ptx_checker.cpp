// The checker against planted misuses of the PTX layer (tests/cuda_emu/planted_ptx.cu): cp.async
// read before its wait_group, a wait one group too shallow, no barrier after the wait, a stage
// refilled while others read it, ldmatrix row addresses misaligned, past the tile, or from half a
// warp. Each must be reported (the read-before-wait also shows without the checks, as poison);
// the correct two-stage pipeline must run clean with the right sums.
// GPEN_EMULATOR_ONLY: planted bugs have no case on a GPU, so the GPU bundle leaves this file out.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#if defined(GPEN_CUDA_EMU)
#include "tests/cuda_emu/planted_ptx.h"

namespace {

using cuda_planted_ptx::Bug;

struct Restore {
  ~Restore() {
    const char* env = std::getenv("GPEN_CUDA_EMU_CHECK");
    cuda_emu::set_checks(env ? env : "none");
  }
};

std::string fault_of(Bug bug, const char* checks, int* out = nullptr) {
  cuda_emu::set_checks(checks);
  cuda_emu::clear_fault();
  const cudaError_t e = cuda_planted_ptx::run(bug, out);
  std::string msg = cuda_emu::last_fault();
  cuda_emu::clear_fault();
  (void)cudaGetLastError();
  if (e != cudaSuccess && e != cudaErrorLaunchFailure) msg = std::string("launch error ") + cudaGetErrorName(e);
  return msg;
}

bool has_any(const std::string& msg, std::initializer_list<const char*> parts) {
  for (const char* p : parts)
    if (msg.find(p) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("ptx checker: ldmatrix misuse is a fault with or without the checks") {
  Restore restore;
  for (const char* checks : {"none", "all"}) {
    CAPTURE(checks);
    std::string m = fault_of(Bug::ldmatrix_misaligned, checks);
    INFO(m);
    CHECK(m.find("ldmatrix: lane 0's row address is not 16-byte aligned") != std::string::npos);
    m = fault_of(Bug::ldmatrix_wrong_row, checks);
    INFO(m);
    CHECK(has_any(m, {"is not in shared memory", "out-of-bounds shared memory"}));
    m = fault_of(Bug::ldmatrix_partial_warp, checks);
    INFO(m);
    // The lanes that skip it exit first: reported as an .aligned violation or (sync) exited lanes.
    CHECK(has_any(m, {"the .aligned instruction needs all 32 lanes", "that have exited", "wait for it in ldmatrix"}));
  }
}

#if defined(GPEN_CUDA_EMU_INSTRUMENTED)
TEST_CASE("ptx checker: cp.async data read before it landed is reported with the source lines") {
  Restore restore;
  for (const char* checks : {"race", "init", "all"}) {
    CAPTURE(checks);
    std::string m = fault_of(Bug::read_before_wait, checks);
    INFO(m);
    CHECK(m.find("read of shared memory s + ") != std::string::npos);
    CHECK(m.find("while a cp.async into it is in flight") != std::string::npos);
    CHECK(m.find("planted_ptx.cu:") != std::string::npos);
    m = fault_of(Bug::wait_too_shallow, checks);
    INFO(m);
    CHECK(m.find("while a cp.async into it is in flight") != std::string::npos);
  }
  // Another thread's copy needs a barrier after the waits; a stage needs one before it is
  // refilled. Which access comes first depends on the schedule (the read before or after the
  // other thread's copy): a read-after-write or a write-after-read race, or the read of a copy in
  // flight; both source lines are named.
  for (Bug bug : {Bug::no_barrier_after_wait, Bug::stage_reuse_war}) {
    const std::string m = fault_of(bug, "race");
    INFO(m);
    CHECK(has_any(m, {"read-after-write race on shared memory s + ", "write-after-read race on shared memory s + ",
                      "while a cp.async into it is in flight"}));
    CHECK(m.find("planted_ptx.cu:") != std::string::npos);
    CHECK(m.find("cp_async_16") != std::string::npos);  // the copy's side is named too
  }
}

TEST_CASE("ptx checker: the correct cp.async pipeline runs clean") {
  Restore restore;
  for (const char* checks : {"none", "all"}) {
    CAPTURE(checks);
    int out[64] = {};
    const std::string m = fault_of(Bug::clean_pipeline, checks, out);
    INFO(m);
    CHECK(m.empty());
    for (int t = 0; t < 64; ++t) CHECK(out[t] == 16 * (63 - t) + 512);
  }
}
#endif

TEST_CASE("ptx checker: without the checks a read before the wait sees poison, not the data") {
  Restore restore;
  int out[64] = {};
  const std::string m = fault_of(Bug::read_before_wait, "none", out);
  CHECK(m.empty());
  for (int t = 0; t < 64; ++t) CHECK(out[t] == -1);  // 0xffffffff
}
#endif
