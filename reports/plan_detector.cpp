// `gpen plan` for the detector: RetinaFace alone (--arch retinaface-r50 | retinaface-mnet), or the
// restore pipeline (--pipeline), the detector and GPEN sharing one arena.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "engine/core/bytes.h"
#include "reports/plan.h"
#include "engine/models/retinaface.h"

namespace gpen::report {

// RetinaFace plans: one input size (WxH), the detector's graph, same report fields as GPEN.
void run_retinaface_plan(const PlanArgs& a, const PlanDevice& dev) {
  RetinaFaceBackbone bb = parse_retinaface_backbone(a.arch == "retinaface-r50" ? "resnet50" : "mobilenet0.25");
  auto [w, h] = parse_input_size(a.input_size);
  RetinaFaceGraph rg = build_retinaface_graph(bb, h, w);
  GPEN_CHECK(a.arena_budget.empty() && a.bands == 0,
             "gpen plan --arch " + a.arch + ": --arena-budget and --bands run GPEN in bands, not the detector");
  report_single_plan(a, dev, rg.graph,
                     {{"arch", a.arch},
                      {"config", {{"backbone", retinaface_backbone_name(bb)}}},
                      {"input_size", {w, h}},
                      {"precision", "fp32"}},
                     std::string("RetinaFace ") + retinaface_backbone_name(bb) + " at " + std::to_string(w) + "x" +
                         std::to_string(h) + ", fp32");
}

// The restore pipeline: the detector runs, then the generator, never both at once, so one arena
// (and one workspace) of the larger size serves both.
void run_pipeline_plan(const PlanArgs& a, const PlanDevice& dev) {
  RetinaFaceBackbone bb = parse_retinaface_backbone(a.arch == "retinaface-mnet" ? "mobilenet0.25" : "resnet50");
  auto [w, h] = parse_input_size(a.input_size);
  const std::string strategy = a.strategy == "all" ? "" : a.strategy;
  RetinaFaceGraph rg = build_retinaface_graph(bb, h, w);
  PlanOptions det_opt = plan_options(a, strategy);
  det_opt.arena_budget = 0;  // banding is for GPEN (below); the detector is planned as it is
  det_opt.bands = 0;
  Planned det = plan_with_transforms(rg.graph, dev.ws, det_opt);

  const auto [name, c] = gpen_base(a);
  Planner planner(a, dev);
  Row gen = planner.plan(name, c, a.precision, strategy);

  // With --sr-scale, RealESRNet takes its turn first (on the photo), in the same arena.
  nlohmann::json jsr;
  MemoryPlan sr;
  if (a.sr_scale > 0) sr = realesrnet_pipeline_part(a, dev, &jsr);
  double parse_flops = 0;
  Planned parse;
  if (a.parse) parse = plan_parsenet_for_pipeline(a, dev, &parse_flops);
  std::vector<const MemoryPlan*> parts = {&det.plan, &gen.plan};
  if (a.parse) parts.push_back(&parse.plan);
  if (a.sr_scale > 0) parts.push_back(&sr);
  SharedMemory joint = shared_memory(parts);
  size_t sep_arena = 0, sep_ws = 0;
  for (const MemoryPlan* p : parts) {
    sep_arena += p->arena_bytes;
    sep_ws += p->workspace_bytes;
  }
  const size_t sep_total = joint.weights_bytes + sep_arena + sep_ws;
  auto part = [](const MemoryPlan& p) {
    return nlohmann::json{{"strategy", p.strategy},          {"weights_bytes", p.weights_bytes},
                          {"arena_bytes", p.arena_bytes},    {"lower_bound_bytes", p.lower_bound_bytes},
                          {"workspace_bytes", p.workspace_bytes}, {"total_bytes", p.total_bytes()}};
  };
  nlohmann::json jd = part(det.plan), jg = part(gen.plan);
  jd["arch"] = std::string("retinaface-") + (bb == RetinaFaceBackbone::resnet50 ? "r50" : "mnet");
  jd["input_size"] = {w, h};
  jd["precision"] = "fp32";
  if (det.transformed) jd["transform"] = transform_json(det);
  jg["model"] = name;
  jg["size"] = c.size;
  jg["batch"] = c.batch;
  jg["precision"] = a.precision;
  if (gen.detail.transformed) jg["transform"] = transform_json(gen.detail);
  nlohmann::json j = {{"device", dev.name},
                      {"detector", jd},
                      {"generator", jg},
                      {"joint", {{"arena_bytes", joint.arena_bytes},
                                 {"workspace_bytes", joint.workspace_bytes},
                                 {"weights_bytes", joint.weights_bytes},
                                 {"total_bytes", joint.total_bytes()}}},
                      {"separate", {{"arena_bytes", sep_arena}, {"workspace_bytes", sep_ws}, {"total_bytes", sep_total}}},
                      {"bytes_saved", sep_total - joint.total_bytes()}};
  if (a.sr_scale > 0) j["super_resolution"] = jsr;
  if (a.parse) {
    nlohmann::json jp = part(parse.plan);
    jp.update({{"arch", "parsenet"}, {"input_size", {512, 512}}, {"precision", "fp32"}, {"gflop", parse_flops / 1e9}});
    j["parser"] = jp;
  }
  if (a.json) {
    emit_json(a, j);
    return;
  }
  auto mb = [](size_t b) { return human_bytes(double(b)); };
  std::printf("Pipeline: RetinaFace %s at %dx%d (fp32), then %s%s (workspace for the %s backend)\n",
              retinaface_backbone_name(bb), w, h, gen.cfg.describe().c_str(),
              a.parse ? ", then ParseNet 512x512 (fp32) per face" : "", dev.name.c_str());
  auto line = [](const char* label, const std::string& weights, const std::string& arena, const std::string& lower,
                 const std::string& workspace, const std::string& total) {
    std::printf("  %-10s %10s %10s %10s %10s %10s\n", label, weights.c_str(), arena.c_str(), lower.c_str(),
                workspace.c_str(), total.c_str());
  };
  line("", "weights", "arena", "lower bnd", "workspace", "total");
  if (a.sr_scale > 0)
    line("sr", mb(sr.weights_bytes), mb(sr.arena_bytes), mb(sr.lower_bound_bytes), mb(sr.workspace_bytes),
         mb(sr.total_bytes()));
  std::vector<std::pair<const char*, const MemoryPlan*>> rows = {{"detector", &det.plan}, {"generator", &gen.plan}};
  if (a.parse) rows.push_back({"parser", &parse.plan});
  for (auto [label, p] : rows)
    line(label, mb(p->weights_bytes), mb(p->arena_bytes), mb(p->lower_bound_bytes), mb(p->workspace_bytes),
         mb(p->total_bytes()));
  line("separate", mb(joint.weights_bytes), mb(sep_arena), "", mb(sep_ws), mb(sep_total));
  line("joint", mb(joint.weights_bytes), mb(joint.arena_bytes), "", mb(joint.workspace_bytes), mb(joint.total_bytes()));
  std::printf("  one shared arena saves %s (%.1f%% of the separate total)\n", mb(sep_total - joint.total_bytes()).c_str(),
              100.0 * double(sep_total - joint.total_bytes()) / double(sep_total));
  if (det.transformed) {
    std::printf("  detector ");
    print_transform(det);
  }
  if (gen.detail.transformed) {
    std::printf("  generator ");
    print_transform(gen.detail);
  }
}

}  // namespace gpen::report
