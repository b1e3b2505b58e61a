// `gpen plan --arch gfpgan`: GFPGANv1Clean's plan (weights, arena, workspace, lower bound, GFLOP)
// for --size, --channel-multiplier, --narrow, --batch and --precision (the released models: 512,
// 2, 1; fp32 as the official flow runs, fp16 / bf16 as a device runs them), or the configuration
// of a converted model (-m); --batches and --precisions give one row per pair.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/models/gfpgan.h"
#include "engine/runtime/device.h"
#include "reports/plan.h"
#include "weights/gpw.h"

namespace gpen::report {

void run_gfpgan_plan(const PlanArgs& a, const PlanDevice& dev) {
  const std::vector<DType> precisions = plan_precisions(a);
  GfpganNetConfig c;
  if (!a.model.empty()) {
    c = gfpgan_config_from_gpw(GpwFile::open(a.model));
  } else {
    c.out_size = a.size;
    c.channel_multiplier = a.channel_multiplier;
    c.narrow = a.narrow;
  }
  if (!a.batches.empty() || precisions.size() > 1) {
    return report_batch_sweep(
        a, dev,
        [c](int b, DType t) mutable {
          c.batch = b;
          c.act = t;
          return build_gfpgan_graph(c).graph;
        },
        {{"arch", "gfpgan"}, {"size", c.out_size}}, "GFPGANv1Clean " + std::to_string(c.out_size));
  }
  c.batch = a.batch;
  c.act = precisions[0];
  const char* prec = precision_name(c.act);
  GfpganGraph gg = build_gfpgan_graph(c);
  const double flops = graph_flops(gg.graph);
  char title[128];
  std::snprintf(title, sizeof title, "GFPGANv1Clean %d, batch %d, %s (%.1f GFLOP per run)", c.out_size, c.batch, prec,
                flops / 1e9);
  report_single_plan(a, dev, gg.graph,
                     {{"arch", "gfpgan"}, {"size", c.out_size}, {"batch", c.batch}, {"precision", prec},
                      {"gflop", flops / 1e9}},
                     title);
}

}  // namespace gpen::report
