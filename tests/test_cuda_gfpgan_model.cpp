// GfpganModel on the CUDA backend (emulated): the weights uploaded once, the whole network on the
// device kernels in fp32, on the official fixtures of tests/reference/make_gfpgan_fixtures.py
// (both layouts: different_w with SFT on half the channels, and one shared style code with SFT on
// all of them). The bound is the CPU's against the official network (1e-4): the device kernels
// sum in other orders, which moves the output by float rounding only.
#include <doctest/doctest.h>

#include <string>

#include "engine/runtime/cuda/backend_cuda.h"
#include "engine/runtime/device.h"
#include "tests/cuda_emu/test_util.h"
#include "tests/gfpgan_fixture.h"

using namespace gpen;

namespace {

std::unique_ptr<Backend> emulated_cuda() {
  DeviceOptions o;
  o.kind = DeviceKind::cuda;
  return cuda::make_cuda_backend(o);
}

}  // namespace

TEST_CASE("GfpganModel on the CUDA backend matches the official network (emulated, fp32)") {
  for (const std::string cfg : {"s64", "s32"}) {
    CAPTURE(cfg);
    auto backend = emulated_cuda();
    const auto r = gpen_test::run_gfpgan_fixture(cfg, *backend);
    MESSAGE(cfg << " on cuda: max abs diff output " << r.output << ", style code " << r.style);
    CHECK(r.style <= 1e-4);
    CHECK(r.output <= 1e-4);
  }
}
