#include "engine/plan/memory_plan.h"

#include <algorithm>
#include <chrono>

#include "engine/plan/remat.h"
#include "engine/plan/reorder.h"

namespace gpen {

namespace {

bool in_arena(const TensorDesc& t) { return t.kind == TensorKind::Input || t.kind == TensorKind::Intermediate; }

// [first, last] step of every storage root given the current aliasing. Inputs are alive from
// step 0 (the caller writes them before the run) and outputs to the last step.
void liveness(const Graph& g, const std::vector<int>& storage, std::vector<int>& first, std::vector<int>& last) {
  const int n_tensors = static_cast<int>(g.tensors().size());
  const int last_step = std::max(0, static_cast<int>(g.nodes().size()) - 1);
  first.assign(n_tensors, -1);
  last.assign(n_tensors, -1);
  auto touch = [&](int t, int step) {
    int s = storage[t];
    if (s < 0) return;
    if (first[s] < 0 || step < first[s]) first[s] = step;
    last[s] = std::max(last[s], step);
  };
  for (int t = 0; t < n_tensors; ++t) {
    const TensorDesc& d = g.tensor(t);
    if (storage[t] < 0) continue;
    if (d.kind == TensorKind::Input) touch(t, 0);
    if (d.is_output) touch(t, last_step);
  }
  const auto& nodes = g.nodes();
  for (int step = 0; step < static_cast<int>(nodes.size()); ++step) {
    for (int t : nodes[step].inputs)
      if (t >= 0) touch(t, step);
    for (int t : nodes[step].outputs) touch(t, step);
  }
}

}  // namespace

std::vector<int> resolve_inplace(const Graph& g, bool allow_inplace, int* inplace_count) {
  const int n_tensors = static_cast<int>(g.tensors().size());
  std::vector<int> storage(n_tensors, -1);
  for (int t = 0; t < n_tensors; ++t)
    if (g.tensor(t).kind != TensorKind::Weight) storage[t] = g.root_of(t);
  int count = 0;
  if (allow_inplace) {
    std::vector<int> first, last;
    const auto& nodes = g.nodes();
    for (int step = 0; step < static_cast<int>(nodes.size()); ++step) {
      const Node& n = nodes[step];
      if (n.inplace_input < 0) continue;
      int in = n.inputs[n.inplace_input];
      int out = n.outputs[0];
      const TensorDesc& it = g.tensor(in);
      const TensorDesc& ot = g.tensor(out);
      // Only a dense intermediate output that owns its storage may move into a dying operand of the
      // same size and layout; graph inputs stay intact for the caller, outputs stay readable.
      if (ot.kind != TensorKind::Intermediate || ot.is_output) continue;
      if (storage[out] != out) continue;
      int s = storage[in];
      if (s < 0 || g.tensor(s).kind != TensorKind::Intermediate || g.tensor(s).is_output) continue;
      if (it.strides != ot.strides || !(it.shape == ot.shape) || it.dtype != ot.dtype) continue;
      liveness(g, storage, first, last);
      if (last[s] != step) continue;
      // Nothing else may use the output's own storage: it is fresh at this step by construction.
      for (int t = 0; t < n_tensors; ++t)
        if (storage[t] == out) storage[t] = s;
      ++count;
    }
  }
  if (inplace_count) *inplace_count = count;
  return storage;
}

MemoryPlan plan_memory(const Graph& g, const WorkspaceFn& workspace, const PlanOptions& opt) {
  const KernelFn sized = [&](const Graph& gr, const Node& n) { return NodeKernel{workspace(gr, n)}; };
  MemoryPlan plan = plan_memory(g, sized, opt);
  plan.node_kernels.clear();  // sizes only: no kernel was chosen
  return plan;
}

MemoryPlan plan_memory(const Graph& g, const KernelFn& kernel, const PlanOptions& opt) {
  auto t0 = std::chrono::steady_clock::now();
  MemoryPlan plan;
  plan.weights_bytes = g.weights_bytes();
  std::vector<int> storage = resolve_inplace(g, opt.allow_inplace, &plan.inplace_count);
  std::vector<int> first, last;
  liveness(g, storage, first, last);

  const int n_tensors = static_cast<int>(g.tensors().size());
  std::vector<int> buffer_of(n_tensors, -1);
  for (int t = 0; t < n_tensors; ++t) {
    int s = storage[t];
    if (s < 0 || s != t || !in_arena(g.tensor(t))) continue;
    if (first[s] < 0) continue;  // never touched: needs no memory
    buffer_of[s] = static_cast<int>(plan.buffers.size());
    // A root may host in-place outputs of equal size only, so its own size is the buffer size.
    plan.buffers.push_back({g.tensor(s).bytes(), first[s], last[s]});
    plan.buffer_tensors.push_back({});
  }
  for (int t = 0; t < n_tensors; ++t)
    if (storage[t] == t && buffer_of[t] >= 0) plan.buffer_tensors[buffer_of[t]].push_back(t);
  for (int t = 0; t < n_tensors; ++t)
    if (storage[t] >= 0 && storage[t] != t && g.tensor(t).kind == TensorKind::Intermediate &&
        buffer_of[storage[t]] >= 0)
      plan.buffer_tensors[buffer_of[storage[t]]].push_back(t);

  auto strat = opt.strategy.empty() ? std::move(all_strategies().front()) : make_strategy(opt.strategy);
  plan.strategy = strat->name();
  Placement pl = strat->place(plan.buffers, kArenaAlignment);
  std::string why;
  GPEN_CHECK(placement_valid(plan.buffers, pl, kArenaAlignment, &why),
             std::string("planner strategy ") + strat->name() + " produced an invalid placement: " + why);
  plan.arena_bytes = pl.arena_bytes;
  plan.buffer_offset = pl.offsets;
  plan.lower_bound_bytes = lower_bound_bytes(plan.buffers, kArenaAlignment);
  plan.naive_bytes = naive_bytes(plan.buffers, kArenaAlignment);

  plan.tensor_offset.assign(n_tensors, -1);
  for (int t = 0; t < n_tensors; ++t) {
    int s = storage[t];
    if (s < 0 || buffer_of[s] < 0) continue;
    int64_t elem_off = g.offset_in_root(t);
    plan.tensor_offset[t] =
        static_cast<int64_t>(pl.offsets[buffer_of[s]]) + elem_off * static_cast<int64_t>(dtype_size(g.tensor(t).dtype));
  }
  for (const Node& n : g.nodes()) {
    plan.node_kernels.push_back(kernel(g, n));
    plan.workspace_bytes = std::max(plan.workspace_bytes, plan.node_kernels.back().workspace_bytes);
  }
  plan.workspace_bytes = align_up(plan.workspace_bytes, kArenaAlignment);
  plan.plan_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return plan;
}

SharedMemory shared_memory(const std::vector<const MemoryPlan*>& plans) {
  SharedMemory m;
  for (const MemoryPlan* p : plans) {
    m.arena_bytes = std::max(m.arena_bytes, p->arena_bytes);
    m.workspace_bytes = std::max(m.workspace_bytes, p->workspace_bytes);
    m.weights_bytes += p->weights_bytes;
  }
  return m;
}

size_t liveness_lower_bound(const Graph& g, bool allow_inplace) {
  std::vector<int> storage = resolve_inplace(g, allow_inplace);
  std::vector<int> first, last;
  liveness(g, storage, first, last);
  std::vector<LiveBuffer> buffers;
  for (int t = 0; t < static_cast<int>(g.tensors().size()); ++t)
    if (storage[t] == t && in_arena(g.tensor(t)) && first[t] >= 0) buffers.push_back({g.tensor(t).bytes(), first[t], last[t]});
  return lower_bound_bytes(buffers, kArenaAlignment);
}

std::string PlanOptions::key() const {
  std::string k = strategy + (allow_inplace ? "+inplace" : "") + (rematerialize ? "+remat" : "") +
                  (reorder ? "+reorder" : "") + std::to_string(remat_max_flops_fraction) + "/budget" +
                  std::to_string(arena_budget) + "/bands" + std::to_string(bands) +
                  "/memory" + std::to_string(memory_budget);
  if (band_spec.band_res > 0) {
    k += "/spec" + std::to_string(band_spec.band_res) + "," + std::to_string(band_spec.keep_res) + "," +
         std::to_string(band_spec.bands);
    // Two appends, not ":" + to_string(b): GCC 12 warns (-Wrestrict) on that insert at the front.
    for (int64_t b : band_spec.boundaries) (k += ':') += std::to_string(b);
  }
  return k;
}

TransformReport transform_for_memory(Graph& g, const PlanOptions& opt) {
  TransformReport r;
  r.model_flops = graph_flops(g);
  r.lower_bound_before = liveness_lower_bound(g, opt.allow_inplace);
  r.lower_bound_after_remat = r.lower_bound_before;
  if (opt.rematerialize) {
    RematResult rr = rematerialize(g, opt.allow_inplace, opt.remat_max_flops_fraction * r.model_flops);
    r.remat_flops = rr.flops_added;
    r.recomputed = rr.recomputed;
    r.lower_bound_after_remat = rr.lower_bound_after;
  }
  r.lower_bound_after = r.lower_bound_after_remat;
  r.reorder_rule = "builder";
  if (opt.reorder) {
    ReorderResult ro = reorder_for_memory(g, opt.allow_inplace);
    r.nodes_moved = ro.nodes_moved;
    r.reorder_rule = ro.rule;
    r.lower_bound_after = ro.lower_bound_after;
  }
  if (opt.band_spec.band_res > 0) {
    r.banding_requested = true;
    r.banding = apply_banding(g, opt.band_spec, opt.allow_inplace);
    r.banding_smallest_bound = r.lower_bound_after = r.banding.lower_bound_after;
    r.banding_fits = true;
  } else if (opt.bands > 0 || (opt.arena_budget > 0 && r.lower_bound_after > opt.arena_budget)) {
    r.banding_requested = true;
    BandingSearch s;
    s.budget = opt.arena_budget;
    s.forced_bands = opt.bands;
    r.banding = choose_banding(g, s, opt.allow_inplace, &r.banding_smallest_bound);
    r.banding_fits = r.banding.applied;
    if (r.banding.applied) r.lower_bound_after = r.banding.lower_bound_after;
  } else if (opt.arena_budget > 0) {
    // The graph as it is fits the budget: banding would only add FLOPs.
    r.banding_requested = r.banding_fits = true;
    r.banding_smallest_bound = r.lower_bound_after;
  }
  return r;
}

}  // namespace gpen
