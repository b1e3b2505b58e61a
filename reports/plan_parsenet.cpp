// `gpen plan --arch parsenet`: the face parser's plan (weights, arena, workspace, lower bound,
// GFLOP) for one input size, and its part of `gpen plan --pipeline --parse`.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/core/bytes.h"
#include "reports/plan.h"
#include "engine/models/parsenet.h"

namespace gpen::report {

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
  char title[96];
  std::snprintf(title, sizeof title, "ParseNet at %dx%d, batch %d, fp32 (%.1f GFLOP per run)", w, h, a.batch, flops / 1e9);
  report_single_plan(a, dev, pg.graph,
                     {{"arch", "parsenet"}, {"input_size", {w, h}}, {"batch", a.batch}, {"precision", "fp32"},
                      {"gflop", flops / 1e9}},
                     title);
}

}  // namespace gpen::report
