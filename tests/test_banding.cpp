// Banded execution (engine/plan/banding.h): the banded graph gives the unbanded graph's output
// bit for bit on the CPU in fp32, for fixed and random band geometries (seeded), odd band
// heights, kept and recomputed encoder features, and batches; the bound drops as planned.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/models/gpen_model.h"
#include "engine/photo/pipeline.h"
#include "engine/plan/banding.h"
#include "engine/plan/memory_plan.h"
#include "kernels/cpu/ops.h"

using namespace gpen;

namespace {

GpenConfig small_config(int size) {
  GpenConfig c;
  c.size = size;
  c.channel_multiplier = 1;
  c.narrow = 1.0 / 32;  // 16 channels everywhere
  c.style_dim = 16;
  return c;
}

std::vector<float> random_faces(int n, int s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> in(size_t(n) * s * s * 3);
  for (auto& v : in) v = u(rng);
  return in;
}

std::vector<float> run_with(const GpenConfig& c, int batch, const PlanOptions& o, const std::vector<float>& in,
                            TransformReport* rep = nullptr, MemoryPlan* plan = nullptr) {
  auto be = make_cpu_backend();
  auto m = GpenModel::synthetic(c, *be, 5);
  m->prepare(batch, o);
  std::vector<float> out(in.size());
  m->run(in.data(), out.data());
  if (rep) *rep = m->transform_report();
  if (plan) *plan = m->plan();
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("banding: fixed geometries of a small GPEN are bit-identical on the CPU") {
  cpu::set_num_threads(1);
  const GpenConfig c = small_config(64);
  const auto in = random_faces(1, 64, 3);
  const auto ref = run_with(c, 1, {}, in);
  struct Case {
    int R, keep, bands;
    std::vector<int64_t> bounds;
  };
  const std::vector<Case> cases = {
      {32, 32, 2, {}},  {16, 16, 4, {}},  {8, 8, 8, {}},   {16, 32, 3, {}},
      {16, 64, 5, {}},  {8, 16, 7, {}},   {32, 64, 64, {}},
      {16, 16, 0, {0, 1, 4, 27, 30, 63, 64}},  // odd heights, a one-row band at each end
  };
  for (const Case& k : cases) {
    CAPTURE(k.R);
    CAPTURE(k.keep);
    CAPTURE(k.bands);
    PlanOptions o;
    o.band_spec.band_res = k.R;
    o.band_spec.keep_res = k.keep;
    o.band_spec.bands = k.bands;
    o.band_spec.boundaries = k.bounds;
    TransformReport rep;
    const auto out = run_with(c, 1, o, in, &rep);
    REQUIRE(rep.banding.applied);
    CHECK(rep.banding.lower_bound_after < rep.banding.lower_bound_before);
    CHECK(rep.banding.flops_after >= rep.banding.flops_before);
    CHECK(same_bits(out, ref));
  }
}

TEST_CASE("banding: random band geometries (seeded property test), batch 1 and 2") {
  cpu::set_num_threads(2);
  std::mt19937 rng(2026);
  for (int size : {32, 128}) {
    const GpenConfig c = small_config(size);
    for (int batch : {1, 2}) {
      const auto in = random_faces(batch, size, 7 + size + batch);
      const auto ref = run_with(c, batch, {}, in);
      for (int trial = 0; trial < 6; ++trial) {
        std::vector<int> rs;
        for (int r = size / 2; r >= 8; r /= 2) rs.push_back(r);
        const int R = rs[rng() % rs.size()];
        int keep = R;
        while (keep < size && rng() % 2) keep *= 2;
        // Random cut points: 1..12 bands of any height, odd ones included.
        std::vector<int64_t> cuts{0, size};
        const int extra = static_cast<int>(rng() % 12);
        for (int i = 0; i < extra; ++i) cuts.push_back(1 + static_cast<int64_t>(rng() % (size - 1)));
        std::sort(cuts.begin(), cuts.end());
        cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
        CAPTURE(size);
        CAPTURE(batch);
        CAPTURE(R);
        CAPTURE(keep);
        CAPTURE(cuts.size());
        PlanOptions o;
        o.band_spec.band_res = R;
        o.band_spec.keep_res = keep;
        o.band_spec.boundaries = cuts;
        TransformReport rep;
        MemoryPlan plan;
        const auto out = run_with(c, batch, o, in, &rep, &plan);
        REQUIRE(rep.banding.applied);
        CHECK(plan.lower_bound_bytes == rep.banding.lower_bound_after);
        CHECK(same_bits(out, ref));
      }
    }
  }
}

TEST_CASE("banding: bad specs are refused with a message") {
  GpenGraph gg = build_gpen_graph(small_config(64));
  BandingSpec s;
  s.band_res = 48;
  s.bands = 2;
  CHECK_THROWS_WITH_AS(apply_banding(gg.graph, s), doctest::Contains("power of two"), Error);
  s.band_res = 16;
  s.bands = 0;
  s.boundaries = {0, 30, 20, 64};
  CHECK_THROWS_WITH_AS(apply_banding(gg.graph, s), doctest::Contains("increase"), Error);
  s.boundaries = {0, 30, 63};
  CHECK_THROWS_WITH_AS(apply_banding(gg.graph, s), doctest::Contains("0 to the output height 64"), Error);
  s.boundaries.clear();
  s.bands = 2;
  s.keep_res = 8;
  CHECK_THROWS_WITH_AS(apply_banding(gg.graph, s), doctest::Contains("kept resolution"), Error);
}


TEST_CASE("banding: a memory budget bands before it lowers the batch") {
  const GpenConfig c = small_config(64);
  auto be = make_cpu_backend();
  WorkspaceFn ws = [&](const Graph& g, const Node& n) { return be->workspace_bytes(g, n); };
  auto plain_total = [&](int b) {
    GpenConfig k = c;
    k.batch = b;
    GpenGraph gg = build_gpen_graph(k);
    return plan_memory(gg.graph, ws).total_bytes();
  };
  // Four faces do not fit unbanded (the budget is one byte short), three would.
  const size_t budget = plain_total(4) - 1;
  CHECK(choose_batch(c, *be, budget, 8) == 3);
  const BatchChoice bc = choose_batch_banded(c, *be, budget, 8);
  CHECK(bc.batch >= 4);
  CHECK(bc.banded);
  // The choice runs: prepared with its options, the plan fits the budget.
  auto m = GpenModel::synthetic(c, *be, 5);
  m->prepare(bc.batch, bc.plan);
  CHECK(m->transform_report().banding.applied);
  CHECK(m->plan().total_bytes() <= budget);
  // A budget that fits unbanded is left unbanded.
  const BatchChoice plain = choose_batch_banded(c, *be, plain_total(2), 2);
  CHECK(plain.batch == 2);
  CHECK_FALSE(plain.banded);
}
