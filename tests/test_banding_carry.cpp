// Banded execution with carried halos (line buffers, engine/plan/banding_carry.h): the banded
// graph gives the unbanded graph's output bit for bit on the CPU in fp32 for fixed and random
// band geometries (seeded), odd band heights, kept and recomputed encoder features and batches;
// it computes fewer FLOPs than recomputed halos and reports which stages carry.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "engine/models/gpen_model.h"
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

size_t differing(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return n;
}

}  // namespace

TEST_CASE("banding carry: fixed geometries of a small GPEN are bit-identical on the CPU") {
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
      {16, 64, 5, {}},  {8, 16, 7, {}},   {32, 64, 64, {}}, {8, 8, 64, {}},
      {16, 16, 0, {0, 1, 4, 27, 30, 63, 64}},  // odd heights, a one-row band at each end
      {8, 8, 0, {0, 2, 3, 5, 40, 41, 64}},
  };
  for (const Case& k : cases) {
    CAPTURE(k.R);
    CAPTURE(k.keep);
    CAPTURE(k.bands);
    CAPTURE(k.bounds.size());
    PlanOptions o;
    o.band_spec.band_res = k.R;
    o.band_spec.keep_res = k.keep;
    o.band_spec.bands = k.bands;
    o.band_spec.boundaries = k.bounds;
    o.band_spec.carry = true;
    TransformReport rep;
    const auto out = run_with(c, 1, o, in, &rep);
    REQUIRE(rep.banding.applied);
    CHECK(rep.banding.carried);
    CHECK_FALSE(rep.banding.carried_rows.empty());
    CHECK(rep.banding.carry_bytes > 0);
    CHECK(rep.banding.flops_after >= rep.banding.flops_before);
    CHECK(differing(out, ref) == 0);
    // The same geometry with recomputed halos costs at least as many FLOPs.
    o.band_spec.carry = false;
    TransformReport rec;
    run_with(c, 1, o, in, &rec);
    CHECK(rep.banding.flops_after <= rec.banding.flops_after);
  }
}

TEST_CASE("banding carry: random band geometries (seeded property test), batch 1 and 2") {
  cpu::set_num_threads(2);
  std::mt19937 rng(1818);
  for (int size : {32, 128}) {
    const GpenConfig c = small_config(size);
    for (int batch : {1, 2}) {
      const auto in = random_faces(batch, size, 11 + size + batch);
      const auto ref = run_with(c, batch, {}, in);
      for (int trial = 0; trial < 6; ++trial) {
        std::vector<int> rs;
        for (int r = size / 2; r >= 8; r /= 2) rs.push_back(r);
        const int R = rs[rng() % rs.size()];
        int keep = R;
        while (keep < size && rng() % 2) keep *= 2;
        // Random cut points: 1..24 bands of any height, odd ones and one-row bands included.
        std::vector<int64_t> cuts{0, size};
        const int extra = static_cast<int>(rng() % 24);
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
        o.band_spec.carry = true;
        TransformReport rep;
        MemoryPlan plan;
        const auto out = run_with(c, batch, o, in, &rep, &plan);
        REQUIRE(rep.banding.applied);
        CHECK(plan.lower_bound_bytes == rep.banding.lower_bound_after);
        CHECK(differing(out, ref) == 0);
      }
    }
  }
}

TEST_CASE("banding carry: carried halos cost no FLOPs but the recomputed encoder features") {
  // Carried halos compute each row of every banded op once: conv2d and upfirdn2d through their
  // per-band pads, the same-padded modconv through pad_top / pad_bottom, the transposed one
  // through its row crop (crop_top / crop_bottom). With the encoder features kept whole
  // (keep = S) the banded graph costs exactly the unbanded graph's FLOPs; recomputed features
  // (keep < S) cost theirs once more. Recomputed halos grow with the depth of the banded chain
  // instead. Figures of this model (16 channels, 128 x 128): 4 bands from 32, features kept:
  // +0 % carried (+3.3 % before the transposed crop), +9.8 % recomputed; 16 bands from 16, kept:
  // +0 % and +139 %; 8 bands from 16, nothing kept: +13.8 % and +107 %.
  GpenGraph gg = build_gpen_graph(small_config(128));
  struct Case {
    int R, keep, bands;
    double max_carried;
  };
  for (const Case& k : {Case{32, 128, 4, 0.0}, Case{16, 128, 16, 0.0}, Case{16, 16, 8, 0.32}}) {
    CAPTURE(k.R);
    CAPTURE(k.bands);
    BandingSpec s;
    s.band_res = k.R;
    s.keep_res = k.keep;
    s.bands = k.bands;
    s.carry = true;
    Graph h = gg.graph;
    const BandingResult r = apply_banding(h, s);
    if (k.max_carried == 0.0) {
      CHECK(r.flops_after == r.flops_before);  // every row once: the same count, exactly
    } else {
      CHECK(r.extra_flops_fraction() > 0.0);
      CHECK(r.extra_flops_fraction() < k.max_carried);
    }
    s.carry = false;
    Graph h2 = gg.graph;
    const BandingResult q = apply_banding(h2, s);
    CHECK(q.extra_flops_fraction() > 0.05);
    CHECK(q.extra_flops_fraction() > 4 * r.extra_flops_fraction());
    MESSAGE("R ", k.R, " keep ", k.keep, " bands ", k.bands, ": carried +", 100 * r.extra_flops_fraction(),
            " %, recomputed +", 100 * q.extra_flops_fraction(), " %");
  }
}

TEST_CASE("banding carry: the search picks carried halos when they cost fewer FLOPs") {
  GpenGraph gg = build_gpen_graph(small_config(128));
  const size_t lb0 = liveness_lower_bound(gg.graph);
  BandingSearch s;
  s.budget = lb0 * 85 / 100;
  Graph a = gg.graph;
  const BandingResult both = choose_banding(a, s);
  REQUIRE(both.applied);
  s.try_carry = false;
  Graph b = gg.graph;
  const BandingResult rec = choose_banding(b, s);
  if (rec.applied) CHECK(both.extra_flops_fraction() <= rec.extra_flops_fraction() + 1e-12);
  CHECK(both.carried);
  CHECK(both.lower_bound_after <= s.budget);
}
