#pragma once
// Graph -> arena: liveness of every root storage over the execution order, in-place aliasing of
// elementwise ops on dying inputs, then a PlanStrategy assigns offsets. The result is all a
// backend needs to run the graph in one allocation.
#include <functional>
#include <string>
#include <vector>

#include "engine/graph.h"
#include "engine/planner.h"

namespace gpen {

// Workspace an op needs on a given backend (bytes); the plan reports the maximum.
using WorkspaceFn = std::function<size_t(const Graph&, const Node&)>;

struct PlanOptions {
  std::string strategy;  // empty: the default (best) strategy
  bool allow_inplace = true;
};

struct MemoryPlan {
  std::string strategy;
  size_t arena_bytes = 0;
  size_t lower_bound_bytes = 0;
  size_t naive_bytes = 0;
  size_t workspace_bytes = 0;
  size_t weights_bytes = 0;
  size_t total_bytes() const { return weights_bytes + arena_bytes + workspace_bytes; }
  double plan_ms = 0.0;
  int inplace_count = 0;  // elementwise ops that run in place

  // Per tensor id: byte offset of its first element in the arena, or -1 (weights).
  std::vector<int64_t> tensor_offset;
  // The buffers handed to the strategy, and which root tensors share each one (in-place chains).
  std::vector<LiveBuffer> buffers;
  std::vector<std::vector<int>> buffer_tensors;
  std::vector<size_t> buffer_offset;
};

// Alias decisions made before placement: storage_of[t] is the root tensor whose storage t uses.
std::vector<int> resolve_inplace(const Graph& g, bool allow_inplace, int* inplace_count = nullptr);

MemoryPlan plan_memory(const Graph& g, const WorkspaceFn& workspace, const PlanOptions& opt = {});

}  // namespace gpen
