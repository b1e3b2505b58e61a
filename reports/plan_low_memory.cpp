// `gpen plan --memory-budget B` for GPEN: the CPU's low-memory mode planned into B (what
// `gpen restore --aligned --memory-budget B` runs): weights resident at most (each weight's pages
// let go after its last reader), the arena banded to what the weights and workspace leave, the
// workspace of the per-tile kernels; where every MiB goes, as text or JSON.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "engine/core/bytes.h"
#include "engine/plan/memory_budget.h"
#include "engine/runtime/env_options.h"
#include "reports/plan.h"

namespace gpen::report {

void run_gpen_memory_budget_plan(const PlanArgs& a) {
  if (!a.detector.empty()) return run_photo_memory_budget_plan(a);
  GPEN_CHECK(a.device == "cpu", "gpen plan --memory-budget plans the CPU's low-memory mode (--device cpu)");
  GPEN_CHECK(a.arena_budget.empty() && a.bands == 0,
             "--memory-budget chooses the banding itself: leave out --arena-budget and --bands");
  cpu::CpuOptions o = cpu_options_from_env();
  o.low_memory = true;
  o.huge_pages = false;
  std::shared_ptr<const Backend> cpu = make_cpu_backend(o);
  const WorkspaceFn ws = [cpu](const Graph& g, const Node& n) { return cpu->workspace_bytes(g, n); };
  GpenConfig c = gpen_base(a).cfg;
  c.act_dtype = c.weight_dtype = parse_dtype(a.precision);
  GPEN_CHECK(c.act_dtype == DType::f32, "the CPU runs fp32 (--precision fp32)");
  const size_t budget = parse_bytes(a.sr_budget);
  PlanOptions po = plan_options(a, a.strategy == "all" ? "" : a.strategy);
  const BudgetFit f = fit_memory_budget([&c] { return build_gpen_graph(c).graph; }, ws, budget, po);
  // The unbanded figures beside it, to show what the mode saves.
  const GpenGraph whole = build_gpen_graph(c);
  const WeightResidency wr = weight_residency(whole.graph);
  if (a.json) {
    nlohmann::json j = {{"arch", "gpen"},
                        {"config", {{"size", c.size}, {"channel_multiplier", c.channel_multiplier}, {"narrow", c.narrow}}},
                        {"batch", c.batch},
                        {"weights_dtype", dtype_is_8bit_weight(c.quant8) ? dtype_name(c.quant8) : "fp32"},
                        {"group_size", c.q8_group},
                        {"mode", "low_memory"},
                        {"memory_budget_bytes", budget},
                        {"fits", f.fits},
                        {"weights_file_bytes", f.weights.total_bytes},
                        {"weights_resident_bytes", f.weights.peak_bytes},
                        {"weights_resident_unbanded_bytes", wr.peak_bytes},
                        {"arena_bytes", f.arena_bytes},
                        {"lower_bound_bytes", f.lower_bound_bytes},
                        {"arena_budget_bytes", f.arena_budget},
                        {"banded", f.arena_budget > 0},
                        {"workspace_bytes", f.workspace_bytes},
                        {"total_bytes", f.total()}};
    if (!f.fits) j["smallest_banded_bound_bytes"] = f.smallest_bound;
    emit_json(a, j);
    return;
  }
  std::printf("%s, batch %d, CPU low-memory mode within %s: %s\n", c.describe().c_str(), c.batch,
              human_bytes(double(budget)).c_str(), f.fits ? "fits" : "does NOT fit");
  std::printf("  weights in the file  %10s  (mapped, each let go after its last reader)\n",
              human_bytes(double(f.weights.total_bytes)).c_str());
  std::printf("  weights resident     %10s  at most at once (unbanded graph: %s)\n",
              human_bytes(double(f.weights.peak_bytes)).c_str(), human_bytes(double(wr.peak_bytes)).c_str());
  std::printf("  arena                %10s  (lower bound %s; %s)\n", human_bytes(double(f.arena_bytes)).c_str(),
              human_bytes(double(f.lower_bound_bytes)).c_str(),
              f.arena_budget ? ("banded to " + human_bytes(double(f.arena_budget))).c_str() : "unbanded");
  std::printf("  workspace            %10s  (weights dequantised per tile, no Winograd)\n",
              human_bytes(double(f.workspace_bytes)).c_str());
  std::printf("  total                %10s  of %s%s\n", human_bytes(double(f.total())).c_str(),
              human_bytes(double(budget)).c_str(),
              f.fits ? "" : (" (the smallest banded arena bound reached: " + human_bytes(double(f.smallest_bound)) + ")").c_str());
  std::printf("  not planned: the process's own memory (code, libraries, the images)\n");
}

}  // namespace gpen::report
