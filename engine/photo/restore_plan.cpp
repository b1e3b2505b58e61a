// The memory budget of a restore: the default, GPEN's batch (banded before smaller), RealESRNet's
// share (restore_plan.h).
#include "engine/photo/restore_plan.h"

#include <algorithm>
#include <fstream>
#include <string>

#include "engine/core/bytes.h"
#include "engine/core/error.h"
#include "engine/runtime/device.h"

namespace gpen {

int choose_batch(const GpenConfig& base, Backend& backend, size_t budget, int cap) {
  WorkspaceFn ws = [&](const Graph& g, const Node& n) { return backend.workspace_bytes(g, n); };
  auto total = [&](int b) {
    GpenConfig c = base;
    c.batch = b;
    GpenGraph gg = build_gpen_graph(c);
    return plan_memory(gg.graph, ws).total_bytes();
  };
  size_t one = total(1);
  GPEN_CHECK(one <= budget, "one face at " + std::to_string(base.size) + "x" + std::to_string(base.size) + " needs " +
                                std::to_string(one) + " bytes, more than the memory budget of " +
                                std::to_string(budget));
  int lo = 1, hi = 2;
  while (hi <= cap && total(hi) <= budget) {
    lo = hi;
    hi *= 2;
  }
  hi = std::min(hi, cap + 1);
  while (hi - lo > 1) {
    int mid = (lo + hi) / 2;
    (total(mid) <= budget ? lo : hi) = mid;
  }
  return lo;
}

BatchChoice choose_batch_banded(const GpenConfig& base, Backend& backend, size_t budget, int cap,
                                const PlanOptions& opt) {
  WorkspaceFn ws = [&](const Graph& g, const Node& n) { return backend.workspace_bytes(g, n); };
  // Plain first; then with banding under the arena the budget leaves beside weights and workspace.
  auto fits = [&](int b, PlanOptions* used) {
    GpenConfig c = base;
    c.batch = b;
    GpenGraph gg = build_gpen_graph(c);
    MemoryPlan p = plan_memory(gg.graph, ws, opt);
    if (p.total_bytes() <= budget) return (*used = opt), true;
    const size_t fixed = p.weights_bytes + p.workspace_bytes;
    if (fixed >= budget) return false;
    PlanOptions o = opt;
    o.arena_budget = budget - fixed;
    TransformReport r = transform_for_memory(gg.graph, o);
    if (!r.banding_fits) return false;
    if (plan_memory(gg.graph, ws, o).total_bytes() > budget) return false;
    return (*used = o), true;
  };
  BatchChoice bc;
  GPEN_CHECK(fits(1, &bc.plan), "one face at " + std::to_string(base.size) + "x" + std::to_string(base.size) +
                                    " does not fit the memory budget of " + std::to_string(budget) +
                                    " bytes, not even with banded execution");
  int lo = 1, hi = 2;
  PlanOptions o;
  while (hi <= cap && fits(hi, &o)) {
    lo = hi;
    bc.plan = o;
    hi *= 2;
  }
  hi = std::min(hi, cap + 1);
  while (hi - lo > 1) {
    int mid = (lo + hi) / 2;
    if (fits(mid, &o)) lo = mid, bc.plan = o;
    else hi = mid;
  }
  bc.batch = lo;
  bc.banded = bc.plan.arena_budget > 0;
  return bc;
}

size_t available_ram() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  size_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return size_t{4} << 30;
}

size_t default_memory_budget(Backend& backend, size_t device_weights_bytes) {
  if (auto* dev = dynamic_cast<DeviceBackend*>(&backend)) return dev->memory_info().free / 10 * 8 + device_weights_bytes;
  return available_ram() / 2;
}

MemoryPlan plan_gpen(const GpenConfig& base, int batch, Backend& backend, const PlanOptions& opt,
                     TransformReport* transforms) {
  GpenConfig c = base;
  c.batch = batch;
  GpenGraph gg = build_gpen_graph(c);
  const TransformReport xf = transform_for_memory(gg.graph, opt);
  if (transforms) *transforms = xf;
  return plan_memory(gg.graph, [&](const Graph& g, const Node& n) { return backend.workspace_bytes(g, n); }, opt);
}

BudgetSplit split_budget(const GpenConfig& c, Backend& backend, const BudgetRequest& r) {
  BudgetSplit s;
  s.plan = r.plan;
  s.gpen_budget = r.sr ? r.budget / 2 : r.budget;
  if (r.batch > 0) {
    s.batch = r.batch;
  } else {
    const BatchChoice bc = choose_batch_banded(c, backend, s.gpen_budget, r.batch_cap, r.plan);
    s.batch = bc.batch;
    s.plan = bc.plan;
    s.banded = bc.banded;
    s.batch_from_budget = true;
  }
  TransformReport xf;
  s.gpen = plan_gpen(c, s.batch, backend, s.plan, &xf);
  s.bands = xf.banding.applied ? xf.banding.bands : 0;
  if (r.sr) {
    // Both fit together at the batch limit: RealESRNet's tile comes from what GPEN's plan at that
    // batch, banded when it runs banded, leaves.
    const size_t gpen_total = s.gpen.total_bytes();
    GPEN_CHECK(gpen_total < r.budget,
               "--sr: GPEN at batch " + std::to_string(s.batch) + " plans to " + human_bytes(double(gpen_total)) +
                   ", the whole memory budget of " + human_bytes(double(r.budget)) +
                   "; lower --batch or raise --vram-budget");
    s.sr_budget = r.budget - gpen_total;
  }
  return s;
}

}  // namespace gpen
