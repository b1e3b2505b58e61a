#pragma once
// Graph -> arena: liveness of every root storage over the execution order, in-place aliasing of
// elementwise ops on dying inputs, then a PlanStrategy assigns offsets. The result is all a
// backend needs to run the graph in one allocation.
#include <functional>
#include <string>
#include <vector>

#include "engine/graph/graph.h"
#include "engine/plan/banding.h"
#include "engine/plan/planner.h"
#include "kernels/cpu/conv_select.h"

namespace gpen {

// Workspace an op needs on a given backend (bytes); the plan reports the maximum.
using WorkspaceFn = std::function<size_t(const Graph&, const Node&)>;

// What a backend decides for one node when the graph is planned: the scratch its kernel needs and,
// on the CPU, the conv path (kernels/cpu/conv_select.h) that kernel runs. The plan keeps them
// (MemoryPlan::node_kernels) and the executor runs each node with its own.
struct NodeKernel {
  size_t workspace_bytes = 0;
  cpu::ConvChoice conv{};
};
using KernelFn = std::function<NodeKernel(const Graph&, const Node&)>;

struct PlanOptions {
  std::string strategy;  // empty: the default (best) strategy
  bool allow_inplace = true;
  // Graph transforms applied by transform_for_memory() before planning (see docs/planner.md):
  // recompute cheap tensors instead of keeping them alive across a long gap, and look for an
  // execution order with a lower liveness peak. Each is kept only when it lowers the peak.
  bool rematerialize = false;
  bool reorder = false;
  double remat_max_flops_fraction = 0.02;  // recomputation allowed, as a fraction of the model's FLOPs
  // Banded execution (engine/plan/banding.h), applied after the transforms above: with a budget,
  // the banding with the fewest extra FLOPs whose lower bound fits it; `bands` > 0 fixes the
  // band count (alone: the lowest bound with that many bands).
  size_t arena_budget = 0;
  int bands = 0;
  // The low-memory mode (engine/plan/memory_budget.h): weights resident + arena + workspace within
  // this many bytes; the model chooses arena_budget from it (fit_memory_budget).
  size_t memory_budget = 0;
  BandingSpec band_spec{};  // band_spec.band_res > 0: exactly this banding (tests, experiments)
  std::string key() const;  // the options as a string (caches of prepared plans)
};

// What transform_for_memory() did. Lower bounds are liveness peaks (lower_bound_bytes) of the
// graph before any transform, after rematerialization and after reordering.
struct TransformReport {
  size_t lower_bound_before = 0, lower_bound_after_remat = 0, lower_bound_after = 0;
  double model_flops = 0;      // of the graph before the transforms
  double remat_flops = 0;      // added by recomputation
  std::vector<std::string> recomputed;  // tensors recomputed (original names)
  int nodes_moved = 0;         // nodes the reorder took out of the builder's order
  std::string reorder_rule;    // the ordering kept ("builder" when none was better)
  bool banding_requested = false;
  // With a budget: whether the graph fits it (unbanded when it already did, banding.applied false).
  bool banding_fits = false;
  BandingResult banding;       // applied == false and fits == false: no banding fits the budget
  size_t banding_smallest_bound = 0;  // the smallest bound any banding tried reached
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
  // Per node, when planned with a KernelFn (Backend::plan_node); empty when planned with a
  // WorkspaceFn (sizes only), and the executor then asks its backend.
  std::vector<NodeKernel> node_kernels;
};

// Alias decisions made before placement: storage_of[t] is the root tensor whose storage t uses.
std::vector<int> resolve_inplace(const Graph& g, bool allow_inplace, int* inplace_count = nullptr);

MemoryPlan plan_memory(const Graph& g, const WorkspaceFn& workspace, const PlanOptions& opt = {});
MemoryPlan plan_memory(const Graph& g, const KernelFn& kernel, const PlanOptions& opt = {});

// Graphs that run one after another (the detector, then the generator) can share one arena and
// one workspace: each is the largest of theirs, not the sum. Weights are separate, so they add up.
struct SharedMemory {
  size_t arena_bytes = 0, workspace_bytes = 0, weights_bytes = 0;
  size_t total_bytes() const { return weights_bytes + arena_bytes + workspace_bytes; }
};
SharedMemory shared_memory(const std::vector<const MemoryPlan*>& plans);

// The liveness lower bound of g's arena in its current node order (what plan_memory reports as
// lower_bound_bytes), without placing anything: cheap enough to score graph transforms.
size_t liveness_lower_bound(const Graph& g, bool allow_inplace = true);

// Applies opt.rematerialize / opt.reorder to g in place. Tensor ids that existed before stay
// valid (inputs, outputs, names); recomputation adds tensors and nodes. A no-op when neither is set.
TransformReport transform_for_memory(Graph& g, const PlanOptions& opt);

}  // namespace gpen
