// What every `gpen plan` report shares: the backend's workspace function, the planner options and
// graph transforms, and the plan figures as JSON fields and as text lines.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/core/bytes.h"
#include "reports/plan.h"
#include "engine/runtime/device.h"

namespace gpen::report {

PlanDevice plan_device(const std::string& device) {
  GPEN_CHECK(device == "cpu" || device == "cuda", "gpen plan: unknown --device '" + device + "' (expected cpu or cuda)");
  if (device == "cuda") {
    const CudaProvider* cuda = native_cuda();
    GPEN_CHECK(cuda && cuda->workspace_bytes,
               "gpen plan --device cuda: CUDA support was not compiled in (rebuild with nvcc / -DGPEN_CUDA=ON)");
    return {"cuda", cuda->workspace_bytes};
  }
  std::shared_ptr<const Backend> cpu = make_cpu_backend();
  return {cpu->name(), [cpu](const Graph& g, const Node& n) { return cpu->workspace_bytes(g, n); }};
}

PlanOptions plan_options(const PlanArgs& a, const std::string& strategy) {
  PlanOptions o;
  o.strategy = strategy;
  o.rematerialize = a.remat;
  o.reorder = a.reorder;
  o.remat_max_flops_fraction = a.remat_max_flops / 100.0;
  if (!a.arena_budget.empty()) o.arena_budget = parse_bytes(a.arena_budget);
  o.bands = a.bands;
  return o;
}

Planned plan_with_transforms(Graph& g, const WorkspaceFn& ws, const PlanOptions& o) {
  Planned r;
  r.transformed = o.rematerialize || o.reorder || o.arena_budget > 0 || o.bands > 0;
  r.arena_budget = o.arena_budget;
  if (r.transformed) {
    r.before = plan_memory(g, ws, o);
    r.xf = transform_for_memory(g, o);
  }
  r.plan = plan_memory(g, ws, o);
  if (!r.transformed) r.before = r.plan;
  return r;
}

nlohmann::json transform_json(const Planned& p) {
  const TransformReport& x = p.xf;
  return {{"rematerialize", !x.recomputed.empty() || x.remat_flops > 0},
          {"recomputed", x.recomputed},
          {"flops_added", x.remat_flops},
          {"model_flops", x.model_flops},
          {"flops_added_percent", x.model_flops > 0 ? 100.0 * x.remat_flops / x.model_flops : 0.0},
          {"reorder_rule", x.reorder_rule},
          {"nodes_moved", x.nodes_moved},
          {"lower_bound_before_bytes", x.lower_bound_before},
          {"lower_bound_after_remat_bytes", x.lower_bound_after_remat},
          {"lower_bound_after_bytes", x.lower_bound_after},
          {"arena_before_bytes", p.before.arena_bytes},
          {"arena_after_bytes", p.plan.arena_bytes},
          {"bytes_saved", static_cast<int64_t>(p.before.arena_bytes) - static_cast<int64_t>(p.plan.arena_bytes)}};
}

void print_transform(const Planned& p) {
  const TransformReport& x = p.xf;
  auto mb = [](size_t b) { return human_bytes(double(b)); };
  std::printf("  transforms (model %.3f GFLOP):\n", x.model_flops * 1e-9);
  std::printf("    lower bound  %s -> %s after remat -> %s after reorder\n", mb(x.lower_bound_before).c_str(),
              mb(x.lower_bound_after_remat).c_str(), mb(x.lower_bound_after).c_str());
  std::printf("    arena        %s -> %s  (saved %s)\n", mb(p.before.arena_bytes).c_str(), mb(p.plan.arena_bytes).c_str(),
              p.before.arena_bytes >= p.plan.arena_bytes ? mb(p.before.arena_bytes - p.plan.arena_bytes).c_str() : "-");
  std::string names;
  for (const auto& n : x.recomputed) names += (names.empty() ? "" : ", ") + n;
  std::printf("    remat        %zu tensor(s) recomputed%s%s, +%.4f GFLOP (%.3f%% of the model)\n", x.recomputed.size(),
              names.empty() ? "" : ": ", names.c_str(), x.remat_flops * 1e-9,
              x.model_flops > 0 ? 100.0 * x.remat_flops / x.model_flops : 0.0);
  std::printf("    reorder      order %s, %d node(s) moved\n", x.reorder_rule.c_str(), x.nodes_moved);
  if (x.banding_requested) print_bands(p, p.arena_budget);
}

std::pair<int, int> parse_input_size(const std::string& s) {
  int w = 0, h = 0;
  char x = 0;
  std::istringstream is(s);
  GPEN_CHECK((is >> w >> x >> h) && x == 'x' && w > 0 && h > 0 && is.eof(),
             "--input-size '" + s + "': expected WIDTHxHEIGHT, e.g. 1000x750");
  return {w, h};
}

double ratio(const MemoryPlan& p) { return p.lower_bound_bytes ? double(p.arena_bytes) / p.lower_bound_bytes : 1.0; }

nlohmann::json plan_json(const MemoryPlan& p) {
  return {{"strategy", p.strategy},
          {"weights_bytes", p.weights_bytes},
          {"arena_bytes", p.arena_bytes},
          {"lower_bound_bytes", p.lower_bound_bytes},
          {"naive_bytes", p.naive_bytes},
          {"workspace_bytes", p.workspace_bytes},
          {"total_bytes", p.total_bytes()},
          {"arena_over_lower_bound", ratio(p)},
          {"plan_ms", p.plan_ms}};
}

void print_plan(const MemoryPlan& p, const char* backend) {
  auto mb = [](size_t b) { return human_bytes(double(b)); };
  std::printf("  weights      %12zu  (%s)\n", p.weights_bytes, mb(p.weights_bytes).c_str());
  std::printf("  arena        %12zu  (%s, strategy %s)\n", p.arena_bytes, mb(p.arena_bytes).c_str(), p.strategy.c_str());
  std::printf("  lower bound  %12zu  (%s, arena/lower bound %.4f)\n", p.lower_bound_bytes,
              mb(p.lower_bound_bytes).c_str(), ratio(p));
  std::printf("  naive        %12zu  (%s)\n", p.naive_bytes, mb(p.naive_bytes).c_str());
  if (backend)
    std::printf("  workspace    %12zu  (%s, %s backend)\n", p.workspace_bytes, mb(p.workspace_bytes).c_str(), backend);
  else
    std::printf("  workspace    %12zu  (%s)\n", p.workspace_bytes, mb(p.workspace_bytes).c_str());
  std::printf("  total        %12zu  (%s)\n", p.total_bytes(), mb(p.total_bytes()).c_str());
}

nlohmann::json strategy_json(const MemoryPlan& q) {
  return {{"name", q.strategy},
          {"arena_bytes", q.arena_bytes},
          {"plan_ms", q.plan_ms},
          {"arena_over_lower_bound", ratio(q)}};
}

void print_strategy(const MemoryPlan& q) {
  std::printf("  strategy %-14s arena %12zu  ratio %.4f  %.2f ms\n", q.strategy.c_str(), q.arena_bytes, ratio(q),
              q.plan_ms);
}

void emit_json(const PlanArgs& a, const nlohmann::json& j) {
  if (a.json_out)
    *a.json_out = j;
  else
    std::cout << j.dump(2) << "\n";
}

void report_single_plan(const PlanArgs& a, const PlanDevice& dev, Graph& g, const nlohmann::json& fields,
                        const std::string& title) {
  const bool all = a.strategy == "all";
  Planned pd = plan_with_transforms(g, dev.ws, plan_options(a, all ? "" : a.strategy));
  std::vector<MemoryPlan> strategies;
  if (all)
    for (const auto& name : strategy_names()) strategies.push_back(plan_memory(g, dev.ws, {name}));
  if (a.json) {
    nlohmann::json j = plan_json(pd.plan);
    j.update(fields);
    j.update({{"device", dev.name}, {"ops", g.nodes().size()}, {"tensors", g.tensors().size()}});
    if (pd.transformed) j["transform"] = transform_json(pd);
    if (pd.xf.banding_requested) {  // as GPEN's rows (reports/plan_gpen.cpp)
      j["bands"] = bands_json(pd, pd.arena_budget);
      j["extra_flops_fraction"] = pd.xf.banding.applied ? pd.xf.banding.extra_flops_fraction() : 0.0;
    }
    if (all) {
      j["strategies"] = nlohmann::json::array();
      for (const MemoryPlan& q : strategies) j["strategies"].push_back(strategy_json(q));
    }
    emit_json(a, j);
    return;
  }
  std::printf("%s\n", title.c_str());
  std::printf("  ops %zu, tensors %zu\n", g.nodes().size(), g.tensors().size());
  // The CPU report names no backend (as before --device existed); another device is named.
  print_plan(pd.plan, dev.name == "cpu" ? nullptr : dev.name.c_str());
  if (pd.transformed) print_transform(pd);
  for (const MemoryPlan& q : strategies) print_strategy(q);
}

std::vector<DType> plan_precisions(const PlanArgs& a) {
  std::vector<DType> out;
  for (const std::string& p : a.precisions.empty() ? std::vector<std::string>{a.precision} : a.precisions)
    out.push_back(parse_precision(p));
  return out;
}

void report_batch_sweep(const PlanArgs& a, const PlanDevice& dev, const std::function<Graph(int, DType)>& graph,
                        const nlohmann::json& fields, const std::string& title) {
  GPEN_CHECK(a.strategy != "all", "--batches with --strategy all: give one of them");
  const std::vector<DType> precisions = plan_precisions(a);
  const std::vector<int> batches = a.batches.empty() ? std::vector<int>{a.batch} : a.batches;
  nlohmann::json rows = nlohmann::json::array();
  nlohmann::json names = nlohmann::json::array();
  for (DType t : precisions) names.push_back(precision_name(t));
  if (!a.json) {
    std::printf("%s, %s workspace\n", title.c_str(), dev.name.c_str());
    std::printf("  %5s  %4s  %12s  %12s  %12s  %12s  %12s\n", "batch", "prec", "weights", "arena", "lower bound",
                "workspace", "total");
  }
  for (int b : batches) {
    GPEN_CHECK(b >= 1, "--batches: " + std::to_string(b) + " is not a batch size");
    for (DType t : precisions) {
      Graph g = graph(b, t);
      const Planned pd = plan_with_transforms(g, dev.ws, plan_options(a, a.strategy));
      const MemoryPlan& p = pd.plan;
      nlohmann::json r = plan_json(p);
      r["batch"] = b;
      r["precision"] = precision_name(t);
      rows.push_back(r);
      auto mib = [](size_t v) { return human_bytes(static_cast<double>(v)); };
      if (!a.json)
        std::printf("  %5d  %4s  %12s  %12s  %12s  %12s  %12s\n", b, precision_name(t), mib(p.weights_bytes).c_str(),
                    mib(p.arena_bytes).c_str(), mib(p.lower_bound_bytes).c_str(), mib(p.workspace_bytes).c_str(),
                    mib(p.total_bytes()).c_str());
    }
  }
  if (a.json) {
    nlohmann::json j = fields;
    j.update({{"device", dev.name}, {"precisions", names}, {"batches", rows}});
    if (precisions.size() == 1) j["precision"] = names[0];
    emit_json(a, j);
  }
}

nlohmann::json plan_report(PlanArgs a) {
  nlohmann::json j;
  a.json = true;
  a.json_out = &j;
  a.csv = false;
  a.plot.clear();  // files are the CLI's business
  a.plot_lifetimes.clear();
  run_plan(a);
  return j;
}

}  // namespace gpen::report
