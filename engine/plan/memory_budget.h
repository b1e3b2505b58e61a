#pragma once
// The low-memory mode's plan (`--memory-budget B`, docs/memory.md "Low-memory CPU mode"): weights
// read from their file's mapping and let go after their last reader, so at any step only the
// weights between their first and last reader are resident; the arena banded so that those
// weights, the arena and the workspace together fit B.
#include <cstddef>
#include <functional>

#include "engine/graph/graph.h"
#include "engine/plan/memory_plan.h"

namespace gpen {

// The most weight bytes mapped at once when each weight's pages go after its last reader: the
// largest sum, over the steps, of the weights whose first and last readers span that step (an
// 8-bit weight with its `<name>.qscale` scales), each rounded out to whole pages plus one page
// (a tensor straddles page boundaries).
struct WeightResidency {
  size_t peak_bytes = 0;   // the bound
  size_t total_bytes = 0;  // every weight tensor, as MemoryPlan::weights_bytes
  int peak_node = -1;      // the first node where the peak is reached
};
WeightResidency weight_residency(const Graph& g, size_t page_bytes = 4096);

// What fitting a memory budget chose.
struct BudgetFit {
  size_t budget = 0;
  bool fits = false;
  size_t arena_budget = 0;  // the arena budget banded to (0: unbanded fits)
  BandingSpec banding;      // the banding that fits (band_res 0: none), to apply without a search
  WeightResidency weights;
  size_t arena_bytes = 0, workspace_bytes = 0, lower_bound_bytes = 0;
  size_t total() const { return weights.peak_bytes + arena_bytes + workspace_bytes; }
  size_t smallest_bound = 0;  // when nothing fits: the smallest arena lower bound banding reached
};

// Chooses the arena budget under which weights resident + arena + workspace <= budget: the graph
// unbanded when it fits, else banded (transform_for_memory, engine/plan/banding.h) to the budget
// less the weights and workspace of the previous try, lowered by the excess until it fits or no
// banding does. `build` makes a fresh copy of the graph (banding rewrites it); `opt` carries the
// other planner options (its arena_budget and bands are ignored).
BudgetFit fit_memory_budget(const std::function<Graph()>& build, const WorkspaceFn& ws, size_t budget,
                            const PlanOptions& opt);

}  // namespace gpen
