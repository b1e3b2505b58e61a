// `gpen plan --arch gfpgan`: GFPGANv1Clean's plan (weights, arena, workspace, lower bound, GFLOP)
// for --size, --channel-multiplier, --narrow and --batch (the released models: 512, 2, 1), or the
// configuration of a converted model (-m).
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/models/gfpgan.h"
#include "reports/plan.h"
#include "weights/gpw.h"

namespace gpen::report {

void run_gfpgan_plan(const PlanArgs& a, const PlanDevice& dev) {
  GPEN_CHECK(a.precision == "fp32", "GFPGAN runs in fp32 only (--precision " + a.precision + ")");
  GfpganNetConfig c;
  if (!a.model.empty()) {
    c = gfpgan_config_from_gpw(GpwFile::open(a.model));
  } else {
    c.out_size = a.size;
    c.channel_multiplier = a.channel_multiplier;
    c.narrow = a.narrow;
  }
  if (!a.batches.empty()) {
    return report_batch_sweep(
        a, dev,
        [c](int b) mutable {
          c.batch = b;
          return build_gfpgan_graph(c).graph;
        },
        {{"arch", "gfpgan"}, {"size", c.out_size}, {"precision", "fp32"}},
        "GFPGANv1Clean " + std::to_string(c.out_size) + ", fp32");
  }
  c.batch = a.batch;
  GfpganGraph gg = build_gfpgan_graph(c);
  const double flops = graph_flops(gg.graph);
  char title[128];
  std::snprintf(title, sizeof title, "GFPGANv1Clean %d, batch %d, fp32 (%.1f GFLOP per run)", c.out_size, c.batch,
                flops / 1e9);
  report_single_plan(a, dev, gg.graph,
                     {{"arch", "gfpgan"}, {"size", c.out_size}, {"batch", c.batch}, {"precision", "fp32"},
                      {"gflop", flops / 1e9}},
                     title);
}

}  // namespace gpen::report
