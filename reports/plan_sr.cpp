// gpen plan --arch realesrnet: the plan of RealESRNet (RRDBNet) on a photo of --input-size, untiled,
// with --tile N, or with the tile `--tile auto` picks for --memory-budget; --sweep-tiles lists the
// arena per tile size. Same report fields as the GPEN plans, plus the tiling and GFLOP.
#include <cstdio>

#include "engine/core/bytes.h"
#include "reports/plan.h"
#include "engine/models/rrdbnet.h"
#include "engine/photo/super_resolution.h"
#include "weights/gpw.h"

namespace gpen::report {

RrdbConfig realesrnet_base(const PlanArgs& a) {
  if (!a.model.empty()) {
    GpwFile f = GpwFile::open(a.model);
    if (f.arch() == "realesrnet") return rrdb_config_from_gpw(f);
  }
  RrdbConfig c;
  c.scale = a.scale;
  c.num_block = a.num_block;
  c.check();
  return c;
}

SrPlan realesrnet_plan(const PlanArgs& a, const RrdbConfig& c, const PlanDevice& dev, int w, int h, std::string* why) {
  const DType act = parse_dtype(a.precision);
  int tile = 0;
  if (a.sr_tile == "auto") {
    const size_t budget = a.sr_budget.empty() ? 0 : parse_bytes(a.sr_budget);
    tile = choose_sr_tile(c, w, h, budget, act, dev.ws, why);
  } else {
    size_t used = 0;
    try {
      tile = std::stoi(a.sr_tile, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    GPEN_CHECK(used == a.sr_tile.size() && tile >= 0, "--tile " + a.sr_tile + ": expected auto, 0 or a tile size");
    if (why) *why = tile ? "tile " + std::to_string(tile) + ", as asked" : "untiled, as asked";
  }
  return plan_sr(c, w, h, tile, act, dev.ws);
}

nlohmann::json sr_plan_json(const SrPlan& p, const RrdbConfig& c, const std::string& prec, int w, int h,
                            const std::string& why) {
  nlohmann::json shapes = nlohmann::json::array();
  for (const auto& [sh, sw] : p.cut_shapes) shapes.push_back({sw, sh});
  return {{"arch", "realesrnet"},
          {"model", c.describe()},
          {"scale", c.scale},
          {"num_block", c.num_block},
          {"input_size", {w, h}},
          {"output_size", {c.scale * w, c.scale * h}},
          {"precision", prec},
          {"tile", p.tile},
          {"tile_reason", why},
          {"tiles", {p.tiles_x, p.tiles_y}},
          {"cut_shapes", shapes},
          {"extended_cuts", p.extended_cuts},
          {"weights_bytes", p.weights_bytes},
          {"arena_bytes", p.arena_bytes},
          {"lower_bound_bytes", p.lower_bound_bytes},
          {"workspace_bytes", p.workspace_bytes},
          {"total_bytes", p.total_bytes()},
          {"gflop", p.flops * 1e-9}};
}

MemoryPlan realesrnet_pipeline_part(const PlanArgs& a, const PlanDevice& dev, nlohmann::json* j) {
  PlanArgs b = a;
  b.model.clear();
  b.scale = a.sr_scale;
  const RrdbConfig c = realesrnet_base(b);
  auto [w, h] = parse_input_size(a.input_size);
  std::string why;
  const SrPlan p = realesrnet_plan(b, c, dev, w, h, &why);
  if (j) *j = sr_plan_json(p, c, a.precision, w, h, why);
  MemoryPlan mp;
  mp.strategy = "best-fit";
  mp.weights_bytes = p.weights_bytes;
  mp.arena_bytes = p.arena_bytes;
  mp.lower_bound_bytes = p.lower_bound_bytes;
  mp.workspace_bytes = p.workspace_bytes;
  return mp;
}

void run_realesrnet_plan(const PlanArgs& a, const PlanDevice& dev) {
  const RrdbConfig c = realesrnet_base(a);
  auto [w, h] = parse_input_size(a.input_size);
  std::string why;
  const SrPlan p = realesrnet_plan(a, c, dev, w, h, &why);
  nlohmann::json j = sr_plan_json(p, c, a.precision, w, h, why);
  j["device"] = dev.name;
  if (a.sweep) {
    // The arena per tile size (docs/memory.md): the official tile sizes users pass by hand.
    nlohmann::json rows = nlohmann::json::array();
    for (int t : {0, 1024, 768, 512, 400, 256, 192, 128, 64, 32}) {
      const SrPlan q = plan_sr(c, w, h, t, parse_dtype(a.precision), dev.ws);
      if (t && q.tile == 0) continue;  // the tile covers the photo: same as untiled
      rows.push_back({{"tile", q.tile}, {"tiles", q.tiles_x * q.tiles_y}, {"arena_bytes", q.arena_bytes},
                      {"workspace_bytes", q.workspace_bytes}, {"total_bytes", q.total_bytes()}, {"gflop", q.flops * 1e-9}});
    }
    j["sweep"] = rows;
  }
  if (a.json) {
    emit_json(a, j);
    return;
  }
  auto mb = [](size_t b) { return human_bytes(double(b)); };
  std::printf("%s on %dx%d -> %dx%d, %s\n", c.describe().c_str(), w, h, c.scale * w, c.scale * h, a.precision.c_str());
  std::printf("  %s\n", why.c_str());
  if (p.tile)
    std::printf("  tile %d: %d x %d tiles, %zu cut shapes%s\n", p.tile, p.tiles_x, p.tiles_y, p.cut_shapes.size(),
                p.extended_cuts ? (", " + std::to_string(p.extended_cuts) + " cuts widened to the unshuffle multiple").c_str() : "");
  std::printf("  weights      %12zu  (%s)\n", p.weights_bytes, mb(p.weights_bytes).c_str());
  std::printf("  arena        %12zu  (%s, the largest cut shape's plan)\n", p.arena_bytes, mb(p.arena_bytes).c_str());
  std::printf("  lower bound  %12zu  (%s)\n", p.lower_bound_bytes, mb(p.lower_bound_bytes).c_str());
  std::printf("  workspace    %12zu  (%s, %s backend)\n", p.workspace_bytes, mb(p.workspace_bytes).c_str(), dev.name.c_str());
  std::printf("  total        %12zu  (%s)\n", p.total_bytes(), mb(p.total_bytes()).c_str());
  std::printf("  compute      %.1f GFLOP (%.2f MFLOP per input pixel)\n", p.flops * 1e-9, p.flops * 1e-6 / (double(w) * h));
  if (a.sweep) {
    std::printf("  %8s %8s %12s %12s %12s %10s\n", "tile", "tiles", "arena", "workspace", "total", "GFLOP");
    for (const auto& r : j["sweep"])
      std::printf("  %8d %8d %12s %12s %12s %10.1f\n", r["tile"].get<int>(), r["tiles"].get<int>(),
                  mb(r["arena_bytes"]).c_str(), mb(r["workspace_bytes"]).c_str(), mb(r["total_bytes"]).c_str(),
                  r["gflop"].get<double>());
  }
}

}  // namespace gpen::report
