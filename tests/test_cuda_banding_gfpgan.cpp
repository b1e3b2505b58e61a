// Banded GFPGANv1Clean on the CUDA backend (engine/plan/banding.h), in the emulator
// (tests/cuda_emu), natively on a GPU with GPEN_CUDA_TESTS_NATIVE: the bilinear resizes, skip
// adds, SFT and noise epilogues of the bands compute the whole graph's rows, so the banded graph
// gives the unbanded graph's image and style code bit for bit in fp32, with recomputed and
// carried halos.
#include <doctest/doctest.h>

#include <vector>

#include "engine/plan/banding.h"
#include "engine/runtime/cuda/backend_cuda.h"
#include "engine/runtime/device.h"
#include "tests/cuda_emu/test_util.h"
#include "tests/gfpgan_banding_fixture.h"

using namespace gpen;
using namespace gpen_test;

TEST_CASE("CUDA banding: banded GFPGANv1Clean equals unbanded bit for bit in fp32") {
  DeviceOptions o;
  o.kind = DeviceKind::cuda;
  auto be = cuda::make_cuda_backend(o);
  struct Case {
    int batch, R, keep;
    std::vector<int64_t> bounds;
    bool carry;
  };
  const std::vector<Case> cases = {
      {1, 16, 16, {0, 9, 14, 15, 64}, false},  // odd heights, a one-row band
      {1, 8, 32, {0, 21, 40, 64}, true},
      {2, 32, 64, {0, 30, 64}, false},
  };
  for (int batch : {1, 2}) {
    const GfpganNetConfig c = small_gfpgan(batch);
    const GfpganGraph whole = build_gfpgan_graph(c);
    GraphWeights w(whole.graph);
    w.upload(*be);
    const auto in = random_faces(c, 11 + batch);
    const GfpganOutputs ref = run_gfpgan_graph(*be, whole, w, in);
    for (const Case& k : cases) {
      if (k.batch != batch) continue;
      CAPTURE(batch);
      CAPTURE(k.R);
      CAPTURE(k.carry);
      BandingSpec spec;
      spec.band_res = k.R;
      spec.keep_res = k.keep;
      spec.boundaries = k.bounds;
      spec.carry = k.carry;
      check_banded_equals_whole(*be, c, spec, w, in, ref);
    }
  }
}
