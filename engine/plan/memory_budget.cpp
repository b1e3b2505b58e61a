#include "engine/plan/memory_budget.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

namespace gpen {

WeightResidency weight_residency(const Graph& g, size_t page_bytes) {
  WeightResidency r;
  const auto& ts = g.tensors();
  const auto& nodes = g.nodes();
  std::vector<int> first(ts.size(), -1), last(ts.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (int t : nodes[i].inputs) {
      if (t < 0) continue;
      const int root = g.root_of(t);
      if (ts[root].kind != TensorKind::Weight) continue;
      if (first[root] < 0) first[root] = static_cast<int>(i);
      last[root] = static_cast<int>(i);
    }
  // Scales go with their weight (kernels read them through the weight's view).
  std::unordered_map<std::string, int> weight_id;
  for (size_t t = 0; t < ts.size(); ++t)
    if (ts[t].kind == TensorKind::Weight) weight_id[ts[t].name] = static_cast<int>(t);
  std::vector<size_t> bytes(ts.size(), 0);
  for (size_t t = 0; t < ts.size(); ++t) {
    if (ts[t].kind != TensorKind::Weight) continue;
    r.total_bytes += ts[t].bytes();
    if (first[t] >= 0) bytes[t] += ts[t].bytes();
    const std::string& n = ts[t].name;
    static const std::string kScale = ".qscale";
    if (n.size() > kScale.size() && n.compare(n.size() - kScale.size(), kScale.size(), kScale) == 0) {
      auto it = weight_id.find(n.substr(0, n.size() - kScale.size()));
      if (it != weight_id.end() && first[it->second] >= 0) bytes[it->second] += ts[t].bytes();
    }
  }
  // Sweep: +bytes at the first reader, -bytes after the last.
  std::vector<int64_t> delta(nodes.size() + 1, 0);
  for (size_t t = 0; t < ts.size(); ++t) {
    if (first[t] < 0 || bytes[t] == 0) continue;
    const size_t b = ((bytes[t] + page_bytes - 1) / page_bytes + 1) * page_bytes;
    delta[first[t]] += static_cast<int64_t>(b);
    delta[last[t] + 1] -= static_cast<int64_t>(b);
  }
  int64_t live = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    live += delta[i];
    if (live > static_cast<int64_t>(r.peak_bytes)) {
      r.peak_bytes = static_cast<size_t>(live);
      r.peak_node = static_cast<int>(i);
    }
  }
  return r;
}

BudgetFit fit_memory_budget(const std::function<Graph()>& build, const WorkspaceFn& ws, size_t budget,
                            const PlanOptions& opt) {
  BudgetFit f;
  f.budget = budget;
  PlanOptions o = opt;
  o.bands = 0;
  o.arena_budget = 0;
  auto measure = [&](const Graph& g) {
    const MemoryPlan p = plan_memory(g, ws, o);
    f.weights = weight_residency(g);
    f.arena_bytes = p.arena_bytes;
    f.workspace_bytes = p.workspace_bytes;
    f.lower_bound_bytes = p.lower_bound_bytes;
  };
  {
    Graph g = build();
    transform_for_memory(g, o);  // the remat / reorder asked for, if any
    measure(g);
  }
  if (f.total() <= budget) {
    f.fits = true;
    return f;
  }
  // A banding's weights resident and workspace depend on where it cuts (the weights of a banded
  // stage stay mapped from its first band to its last), so the arena budget is searched: from
  // what the unbanded weights and workspace leave, lowered by each try's excess (at least an
  // eighth) down to the smallest bound banding reaches; the first that fits has the fewest extra
  // FLOPs of those tried.
  const size_t others = f.weights.peak_bytes + f.workspace_bytes;
  if (others >= budget) return f;
  size_t ab = budget - others;
  bool at_floor = false;  // trying the smallest bound banding reaches
  for (int round = 0; round < 32; ++round) {
    o.arena_budget = ab;
    Graph g = build();
    const TransformReport x = transform_for_memory(g, o);
    if (!x.banding_fits) {
      f.smallest_bound = x.banding_smallest_bound;
      if (at_floor || x.banding_smallest_bound == 0) break;
      ab = x.banding_smallest_bound;
      at_floor = true;
      continue;
    }
    measure(g);
    f.arena_budget = ab;
    f.banding = BandingSpec{};
    if (x.banding.applied) {
      const BandingResult& b = x.banding;
      f.banding.band_res = b.band_res, f.banding.keep_res = b.keep_res, f.banding.bands = b.bands;
      f.banding.boundaries = b.boundaries, f.banding.carry = b.carried, f.banding.stage_rows = b.stage_rows;
    }
    if (f.total() <= budget) {
      f.fits = true;
      return f;
    }
    if (at_floor) break;
    const size_t top = std::min(f.arena_bytes, ab), step = std::max(f.total() - budget, ab / 8);
    ab = top > step ? top - step : 1;  // 1: below any banding, so the floor is tried next
  }
  f.fits = false;
  return f;
}

}  // namespace gpen
