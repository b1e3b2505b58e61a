// `gpen plan --arch parsenet`: the face parser's plan (weights, arena, workspace, lower bound,
// GFLOP) for one input size, and its part of `gpen plan --pipeline --parse`.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "apps/format.h"
#include "apps/plan_internal.h"
#include "engine/models/parsenet.h"

namespace gpen::cli::plan_detail {

namespace {

// "512" or "WxH"; the detector's default (1000x750) means "not given": ParseNet's 512.
std::pair<int, int> parse_size(const std::string& s) {
  if (s == PlanArgs{}.input_size) return {kParseSize, kParseSize};
  if (s.find('x') == std::string::npos) {
    const auto [w, h] = parse_input_size(s + "x" + s);
    return {w, h};
  }
  return parse_input_size(s);
}

}  // namespace

Planned plan_parsenet_for_pipeline(const PlanArgs& a, const PlanDevice& dev, double* flops) {
  ParseNetGraph pg = build_parsenet_graph(kParseSize, kParseSize);
  if (flops) *flops = graph_flops(pg.graph);
  return plan_with_transforms(pg.graph, dev.ws, plan_options(a, a.strategy == "all" ? "" : a.strategy));
}

void run_parsenet_plan(const PlanArgs& a, const PlanDevice& dev) {
  const auto [w, h] = parse_size(a.input_size);
  GPEN_CHECK(a.precision == "fp32", "ParseNet runs in fp32 only (--precision " + a.precision + ")");
  ParseNetGraph pg = build_parsenet_graph(h, w, a.batch);
  const double flops = graph_flops(pg.graph);
  const bool all = a.strategy == "all";
  Planned pd = plan_with_transforms(pg.graph, dev.ws, plan_options(a, all ? "" : a.strategy));
  std::vector<MemoryPlan> strategies;
  if (all)
    for (const auto& name : strategy_names()) strategies.push_back(plan_memory(pg.graph, dev.ws, {name}));
  if (a.json) {
    nlohmann::json j = plan_json(pd.plan);
    j.update({{"arch", "parsenet"},
              {"input_size", {w, h}},
              {"batch", a.batch},
              {"precision", "fp32"},
              {"device", dev.name},
              {"gflop", flops / 1e9},
              {"ops", pg.graph.nodes().size()},
              {"tensors", pg.graph.tensors().size()}});
    if (pd.transformed) j["transform"] = transform_json(pd);
    if (all) {
      j["strategies"] = nlohmann::json::array();
      for (const MemoryPlan& q : strategies) j["strategies"].push_back(strategy_json(q));
    }
    emit_json(a, j);
    return;
  }
  std::printf("ParseNet at %dx%d, batch %d, fp32 (%.1f GFLOP per run)\n", w, h, a.batch, flops / 1e9);
  std::printf("  ops %zu, tensors %zu\n", pg.graph.nodes().size(), pg.graph.tensors().size());
  print_plan(pd.plan, dev.name == "cpu" ? nullptr : dev.name.c_str());
  if (pd.transformed) print_transform(pd);
  for (const MemoryPlan& q : strategies) print_strategy(q);
}

}  // namespace gpen::cli::plan_detail
