// The planner's choice of banding under a byte budget: every band resolution, every choice of
// which encoder features above it to keep whole (the others are recomputed per band), and band
// counts from 2 to max_bands, each scored by the liveness lower bound of the transformed graph
// and its extra FLOPs, with halos recomputed per band or carried from band to band (line
// buffers). The cheapest in FLOPs that fits wins; ties go to the smaller bound.
#include <cmath>

#include "engine/plan/banding.h"
#include "engine/plan/memory_plan.h"

namespace gpen {

namespace {

std::vector<int> band_counts(int max_bands, int64_t rows) {
  std::vector<int> c;
  for (int n : {2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 18, 20, 22, 24, 28, 32, 40, 48, 56, 64, 96, 128})
    if (n <= max_bands && n <= rows) c.push_back(n);
  return c;
}

}  // namespace

BandingResult choose_banding(Graph& g, const BandingSearch& s, bool allow_inplace, size_t* best_lb) {
  const int64_t S = banding_output_rows(g);
  const size_t lb0 = liveness_lower_bound(g, allow_inplace);
  std::vector<int> counts = s.forced_bands > 0 ? std::vector<int>{s.forced_bands} : band_counts(s.max_bands, S);
  struct Candidate {
    BandingSpec spec;
    BandingResult r;
  };
  std::vector<Candidate> fits;
  size_t smallest = lb0;
  // Carried halos with the modconvs running every band: a longer step (BandingSpec::stage_rows)
  // drags the recomputed encoder features ahead of the decoder and never won on GPEN-512/1024.
  std::vector<std::pair<bool, int>> modes;
  if (s.try_recompute) modes.push_back({false, 0});
  if (s.try_carry) modes.push_back({true, 0});
  for (const auto& [carry, step] : modes)
  for (int R : banding_resolutions(g)) {
    for (int keep = R; keep <= S; keep *= 2) {
      for (int n : counts) {
        Graph h = g;
        BandingSpec spec;
        spec.band_res = R;
        spec.keep_res = keep;
        spec.bands = n;
        spec.carry = carry;
        spec.stage_rows = step;
        BandingResult r = apply_banding(h, spec, allow_inplace);
        smallest = std::min(smallest, r.lower_bound_after);
        // More bands only cost more; a forced count is tried whatever it costs.
        if (s.forced_bands == 0 && r.extra_flops_fraction() > s.max_extra_flops) break;
        if (s.budget == 0 || r.lower_bound_after <= s.budget) fits.push_back({spec, r});
      }
    }
  }
  if (best_lb) *best_lb = smallest;
  // No budget: the lowest bound first. A budget: the fewest FLOPs first, then the smaller bound.
  std::stable_sort(fits.begin(), fits.end(), [&](const Candidate& a, const Candidate& b) {
    const double fa = a.r.extra_flops_fraction(), fb = b.r.extra_flops_fraction();
    if (s.budget == 0) {
      if (a.r.lower_bound_after != b.r.lower_bound_after) return a.r.lower_bound_after < b.r.lower_bound_after;
      return fa < fb;
    }
    if (std::fabs(fa - fb) > 1e-9) return fa < fb;
    return a.r.lower_bound_after < b.r.lower_bound_after;
  });
  // The bound is what no placement beats; the budget is for the placed arena, which on banded
  // graphs (thousands of short-lived buffers) can be a few percent above it: check it.
  const WorkspaceFn none = [](const Graph&, const Node&) { return size_t{0}; };
  PlanOptions po;
  po.allow_inplace = allow_inplace;
  for (const Candidate& c : fits) {
    Graph h = g;
    BandingResult r = apply_banding(h, c.spec, allow_inplace);
    if (s.budget > 0 && plan_memory(h, none, po).arena_bytes > s.budget) continue;
    g = std::move(h);
    return r;
  }
  return BandingResult{};
}

}  // namespace gpen
