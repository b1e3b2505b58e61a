// `gpen plan --arch restoreformer`: RestoreFormer++'s plan (weights, arena, workspace, lower bound,
// GFLOP) for --batch and --precision at 512 x 512, of the released configuration or of a converted
// model (-m); --batches and --precisions give one row per pair.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/models/restoreformer.h"
#include "engine/runtime/device.h"
#include "reports/plan.h"
#include "weights/gpw.h"

namespace gpen::report {

void run_restoreformer_plan(const PlanArgs& a, const PlanDevice& dev) {
  const std::vector<DType> precisions = plan_precisions(a);
  GPEN_CHECK(a.size == RestoreformerNetConfig::kSize,
             "RestoreFormer's input is 512 x 512 (--size " + std::to_string(a.size) + ")");
  RestoreformerNetConfig c;
  if (!a.model.empty()) c = restoreformer_config_from_gpw(GpwFile::open(a.model));
  const char* name = c.ex_multi_scale_num == 1 ? "RestoreFormer++" : "RestoreFormer";
  if (!a.batches.empty() || precisions.size() > 1) {
    return report_batch_sweep(
        a, dev,
        [c](int b, DType t) mutable {
          c.batch = b;
          c.act = t;
          return build_restoreformer_graph(c).graph;
        },
        {{"arch", "restoreformer"}, {"model", std::string(name) + " 512"}, {"size", RestoreformerNetConfig::kSize}},
        std::string(name) + " 512 (ch " + std::to_string(c.ch) + ", " + std::to_string(c.head_size) + " heads)");
  }
  c.batch = a.batch;
  c.act = precisions[0];
  const char* prec = precision_name(c.act);
  RestoreformerGraph rg = build_restoreformer_graph(c);
  const double flops = graph_flops(rg.graph);
  char title[160];
  std::snprintf(title, sizeof title, "%s 512 (ch %d, %d heads), batch %d, %s (%.1f GFLOP per run)", name, c.ch,
                c.head_size, c.batch, prec, flops / 1e9);
  report_single_plan(a, dev, rg.graph,
                     {{"arch", "restoreformer"}, {"model", std::string(name) + " 512"}, {"size", RestoreformerNetConfig::kSize},
                      {"batch", c.batch}, {"precision", prec}, {"gflop", flops / 1e9}},
                     title);
}

}  // namespace gpen::report
