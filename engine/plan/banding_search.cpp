// The planner's choice of banding under a byte budget: every band resolution, every choice of
// which encoder features above it to keep whole (the others are recomputed per band), and band
// counts from 2 to max_bands, each scored by the liveness lower bound of the transformed graph
// and its extra FLOPs. The cheapest in FLOPs that fits wins; ties go to the smaller bound.
#include <cmath>

#include "engine/plan/banding.h"
#include "engine/plan/memory_plan.h"

namespace gpen {

namespace {

std::vector<int> band_counts(int max_bands, int64_t rows) {
  std::vector<int> c;
  for (int n : {2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128})
    if (n <= max_bands && n <= rows) c.push_back(n);
  return c;
}

}  // namespace

BandingResult choose_banding(Graph& g, const BandingSearch& s, bool allow_inplace, size_t* best_lb) {
  const int64_t S = banding_output_rows(g);
  const size_t lb0 = liveness_lower_bound(g, allow_inplace);
  std::vector<int> counts = s.forced_bands > 0 ? std::vector<int>{s.forced_bands} : band_counts(s.max_bands, S);
  BandingResult best;
  Graph best_graph;
  size_t smallest = lb0;
  auto better = [&](const BandingResult& r) {
    const bool fits = s.budget == 0 || r.lower_bound_after <= s.budget;
    if (!fits) return false;
    if (!best.applied) return true;
    if (s.budget == 0) {  // no budget: the lowest bound within the FLOP allowance
      if (r.lower_bound_after != best.lower_bound_after) return r.lower_bound_after < best.lower_bound_after;
      return r.extra_flops_fraction() < best.extra_flops_fraction();
    }
    const double a = r.extra_flops_fraction(), b = best.extra_flops_fraction();
    if (std::fabs(a - b) > 1e-9) return a < b;
    return r.lower_bound_after < best.lower_bound_after;
  };
  for (int R : banding_resolutions(g)) {
    for (int keep = R; keep <= S; keep *= 2) {
      for (int n : counts) {
        Graph h = g;
        BandingSpec spec;
        spec.band_res = R;
        spec.keep_res = keep;
        spec.bands = n;
        BandingResult r = apply_banding(h, spec, allow_inplace);
        smallest = std::min(smallest, r.lower_bound_after);
        if (r.extra_flops_fraction() > s.max_extra_flops) break;  // more bands only cost more
        if (better(r)) {
          best = r;
          best_graph = std::move(h);
        }
      }
    }
  }
  if (best_lb) *best_lb = smallest;
  if (best.applied) g = std::move(best_graph);
  return best;
}

}  // namespace gpen
