// Banded execution of GFPGANv1Clean (engine/plan/banding.h): the U-Net down path above R in
// bands, the style code and everything at R and below whole, then the U-Net up path, the SFT
// conditions and the StyleGAN2 decoder above R in bands (bilinear resizes, skip adds, SFT and the
// noise epilogue on their rows). The banded graph gives the unbanded graph's image and style code
// bit for bit on the CPU in fp32, with recomputed and carried halos, and its bound drops.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/plan/banding.h"
#include "kernels/cpu/ops.h"
#include "tests/gfpgan_banding_fixture.h"

using namespace gpen;
using namespace gpen_test;

namespace {

// The bands run the direct conv (Winograd's tiles span rows: kernels/cpu/conv_select.h), so the
// unbanded reference does too.
const bool kDirectConvs = [] { return setenv("GPEN_CPU_CONV", "direct", 1) == 0; }();

}  // namespace

TEST_CASE("banding: GFPGANv1Clean banded at several R, kept features and band counts is bit-identical on the CPU") {
  REQUIRE(kDirectConvs);
  cpu::set_num_threads(1);
  for (int batch : {1, 2}) {
    const GfpganNetConfig c = small_gfpgan(batch);
    const GfpganGraph whole = build_gfpgan_graph(c);
    auto be = make_cpu_backend();
    const GraphWeights w(whole.graph);
    const auto in = random_faces(c, 5 + batch);
    const GfpganOutputs ref = run_gfpgan_graph(*be, whole, w, in);
    bool finite = true;
    for (float v : ref.image) finite = finite && std::isfinite(v);
    REQUIRE(finite);
    REQUIRE(ref.image.front() != ref.image.back());
    struct Case {
      int R, keep, bands;
      std::vector<int64_t> bounds;
      bool carry;
    };
    const std::vector<Case> cases = {
        {32, 32, 2, {}, false}, {16, 16, 4, {}, false}, {8, 8, 8, {}, false},   {16, 64, 3, {}, false},
        {8, 32, 5, {}, false},  {32, 64, 64, {}, false}, {16, 16, 0, {0, 1, 4, 27, 30, 63, 64}, false},
        {16, 16, 4, {}, true},  {8, 32, 7, {}, true},   {32, 32, 0, {0, 1, 4, 27, 30, 63, 64}, true},
    };
    for (const Case& k : cases) {
      CAPTURE(batch);
      CAPTURE(k.R);
      CAPTURE(k.keep);
      CAPTURE(k.bands);
      CAPTURE(k.carry);
      BandingSpec spec;
      spec.band_res = k.R;
      spec.keep_res = k.keep;
      spec.bands = k.bands;
      spec.boundaries = k.bounds;
      spec.carry = k.carry;
      check_banded_equals_whole(*be, c, spec, w, in, ref);
    }
  }
}

TEST_CASE("banding: the search bands GFPGANv1Clean under a budget its unbanded bound exceeds") {
  GfpganGraph gg = build_gfpgan_graph(small_gfpgan(1));
  const size_t lb = liveness_lower_bound(gg.graph, true);
  BandingSearch s;
  s.budget = lb / 2;
  size_t smallest = 0;
  const BandingResult r = choose_banding(gg.graph, s, true, &smallest);
  REQUIRE(r.applied);
  CHECK(r.lower_bound_before == lb);
  CHECK(r.lower_bound_after <= s.budget);
  CHECK(liveness_lower_bound(gg.graph, true) == r.lower_bound_after);
  const WorkspaceFn none = [](const Graph&, const Node&) { return size_t{0}; };
  CHECK(plan_memory(gg.graph, none).arena_bytes <= s.budget);
  MESSAGE("GFPGAN 64: bound " << lb << " -> " << r.lower_bound_after << " bytes at R " << r.band_res << ", "
                              << r.bands << " bands, " << std::string(r.carried ? "carried" : "recomputed") << " halos, extra FLOPs "
                              << 100 * r.extra_flops_fraction() << " %");
}
