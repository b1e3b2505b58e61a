// `gpen plan --arch codeformer`: CodeFormer's plan (weights, arena, workspace, lower bound, GFLOP)
// for --batch and --precision at 512 x 512, of the released configuration or of a converted model
// (-m), with the fuse blocks in (fidelity w 0.5; at w 0 the official code skips them); --batches
// and --precisions give one row per pair.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/models/codeformer.h"
#include "engine/runtime/device.h"
#include "reports/plan.h"
#include "weights/gpw.h"

namespace gpen::report {

void run_codeformer_plan(const PlanArgs& a, const PlanDevice& dev) {
  const std::vector<DType> precisions = plan_precisions(a);
  GPEN_CHECK(a.size == CodeformerNetConfig::kSize,
             "CodeFormer's input is 512 x 512 (--size " + std::to_string(a.size) + ")");
  CodeformerNetConfig c;
  if (!a.model.empty()) c = codeformer_config_from_gpw(GpwFile::open(a.model));
  c.w = 0.5f;
  if (!a.batches.empty() || precisions.size() > 1) {
    return report_batch_sweep(
        a, dev,
        [c](int b, DType t) mutable {
          c.batch = b;
          c.act = t;
          return build_codeformer_graph(c).graph;
        },
        {{"arch", "codeformer"}, {"size", CodeformerNetConfig::kSize}, {"w", c.w}},
        "CodeFormer 512 (dim_embd " + std::to_string(c.dim_embd) + ", " + std::to_string(c.n_layers) +
            " layers), w 0.5");
  }
  c.batch = a.batch;
  c.act = precisions[0];
  const char* prec = precision_name(c.act);
  CodeformerGraph cg = build_codeformer_graph(c);
  const double flops = graph_flops(cg.graph);
  char title[160];
  std::snprintf(title, sizeof title, "CodeFormer 512 (dim_embd %d, %d layers), batch %d, w %.1f, %s (%.1f GFLOP per run)",
                c.dim_embd, c.n_layers, c.batch, static_cast<double>(c.w), prec, flops / 1e9);
  report_single_plan(a, dev, cg.graph,
                     {{"arch", "codeformer"}, {"size", CodeformerNetConfig::kSize}, {"batch", c.batch},
                      {"precision", prec}, {"w", c.w}, {"gflop", flops / 1e9}},
                     title);
}

}  // namespace gpen::report
