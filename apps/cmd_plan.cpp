// gpen plan: the memory plan of a model for concrete (size, batch, precision) choices, from the
// architecture alone (no weights are read), as one report, a sweep table, CSV, JSON or a chart.
// The workspace column is that of the backend named by --device; planning for CUDA needs CUDA
// compiled in but no GPU (only the backend's host-side workspace arithmetic runs).
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/cli.h"
#include "apps/format.h"
#include "apps/svg.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/device.h"
#include "engine/plan/memory_plan.h"
#include "engine/models/gpen.h"
#include "engine/models/gpen_model.h"
#include "engine/models/retinaface.h"

namespace gpen::cli {
namespace {

struct PlanArgs {
  std::string arch = "gpen";
  std::string model;
  int size = 512;
  std::vector<int> sizes;
  bool sweep = false;
  int channel_multiplier = 2;
  double narrow = 1.0;
  int batch = 1;
  std::vector<int> batches;
  std::string precision = "fp32";
  std::vector<std::string> precisions;
  std::string strategy;
  bool json = false;
  bool csv = false;
  bool official = false;
  bool tensors = false;
  std::string max_batch_for;
  std::string plot;
  std::string plot_lifetimes;
  std::string input_size = "1000x750";
  bool remat = false;
  bool reorder = false;
  double remat_max_flops = 2.0;  // percent of the model's FLOPs
  bool pipeline = false;
  std::string device = "cpu";
};

// The backend whose workspace figures a plan uses.
struct PlanDevice {
  std::string name;
  WorkspaceFn ws;
};

// Only the workspace function of a backend is used, so no device is opened (and none is needed).
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
  return o;
}

// A plan of one graph, with the graph transforms of --remat / --reorder: `before` plans the
// builder's graph, `plan` the transformed one (the same when no transform was asked for).
struct Planned {
  MemoryPlan plan, before;
  bool transformed = false;
  TransformReport xf;
};

Planned plan_with_transforms(Graph& g, const WorkspaceFn& ws, const PlanOptions& o) {
  Planned r;
  r.transformed = o.rematerialize || o.reorder;
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

// The figures every plan report has (GPEN and RetinaFace), as JSON fields and as text lines.
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

// `backend`: named after the workspace figure when not null.
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

// One entry of the --strategy all comparison.
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

// RetinaFace plans: one input size (WxH), the detector's graph, same report fields as GPEN.
void run_retinaface_plan(const PlanArgs& a, const PlanDevice& dev) {
  RetinaFaceBackbone bb = parse_retinaface_backbone(a.arch == "retinaface-r50" ? "resnet50" : "mobilenet0.25");
  auto [w, h] = parse_input_size(a.input_size);
  RetinaFaceGraph rg = build_retinaface_graph(bb, h, w);
  const bool all = a.strategy == "all";
  Planned pd = plan_with_transforms(rg.graph, dev.ws, plan_options(a, all ? "" : a.strategy));
  const MemoryPlan& p = pd.plan;
  std::vector<MemoryPlan> strategies;
  if (all)
    for (const auto& name : strategy_names()) strategies.push_back(plan_memory(rg.graph, dev.ws, {name}));
  if (a.json) {
    nlohmann::json j = plan_json(p);
    j.update({{"arch", a.arch},
              {"config", {{"backbone", retinaface_backbone_name(bb)}}},
              {"input_size", {w, h}},
              {"precision", "fp32"},
              {"device", dev.name},
              {"ops", rg.graph.nodes().size()},
              {"tensors", rg.graph.tensors().size()}});
    if (pd.transformed) j["transform"] = transform_json(pd);
    if (all) {
      j["strategies"] = nlohmann::json::array();
      for (const MemoryPlan& q : strategies) j["strategies"].push_back(strategy_json(q));
    }
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("RetinaFace %s at %dx%d, fp32\n", retinaface_backbone_name(bb), w, h);
  std::printf("  ops %zu, tensors %zu\n", rg.graph.nodes().size(), rg.graph.tensors().size());
  // The CPU report names no backend (as before --device existed); another device is named.
  print_plan(p, dev.name == "cpu" ? nullptr : dev.name.c_str());
  if (pd.transformed) print_transform(pd);
  for (const MemoryPlan& q : strategies) print_strategy(q);
}

struct Row {
  std::string model;
  GpenConfig cfg;
  std::string precision;
  MemoryPlan plan;
  size_t ops = 0, tensors = 0;
  Planned detail;  // before / after the graph transforms
};

class Planner {
 public:
  Planner(const PlanArgs& a, PlanDevice dev) : dev_(std::move(dev)), args_(a) {}
  Row plan(const std::string& name, GpenConfig c, const std::string& prec, const std::string& strategy) {
    c.act_dtype = c.weight_dtype = parse_dtype(prec);
    GpenGraph gg = build_gpen_graph(c);
    Planned pd = plan_with_transforms(gg.graph, dev_.ws, plan_options(args_, strategy));
    Row r{name, c, prec, pd.plan, gg.graph.nodes().size(), gg.graph.tensors().size(), pd};
    last_graph_ = std::move(gg);
    return r;
  }
  const Graph& last_graph() const { return last_graph_.graph; }
  const char* device() const { return dev_.name.c_str(); }

 private:
  PlanDevice dev_;
  PlanArgs args_;
  GpenGraph last_graph_;
};

nlohmann::json row_json(const Row& r, bool brief = true) {
  const MemoryPlan& p = r.plan;
  nlohmann::json j = plan_json(p);
  j.update({{"model", r.model},
            {"arch", "gpen"},
            {"config", {{"size", r.cfg.size}, {"channel_multiplier", r.cfg.channel_multiplier}, {"narrow", r.cfg.narrow}}},
            {"batch", r.cfg.batch},
            {"precision", r.precision}});
  if (r.detail.transformed) j["transform"] = transform_json(r.detail);
  if (!brief) {
    j["ops"] = r.ops;
    j["tensors"] = r.tensors;
    j["buffers"] = p.buffers.size();
    j["inplace_ops"] = p.inplace_count;
  }
  return j;
}

void print_table(const std::vector<Row>& rows) {
  std::printf("%-14s %5s %5s %5s %-14s %10s %10s %10s %10s %10s %10s %7s\n", "model", "size", "batch", "prec",
              "strategy", "weights", "arena", "workspace", "lower bnd", "naive", "total", "ratio");
  for (const Row& r : rows) {
    const MemoryPlan& p = r.plan;
    std::printf("%-14s %5d %5d %5s %-14s %10s %10s %10s %10s %10s %10s %7.4f\n", r.model.c_str(), r.cfg.size,
                r.cfg.batch, r.precision.c_str(), p.strategy.c_str(), human_bytes(p.weights_bytes).c_str(),
                human_bytes(p.arena_bytes).c_str(), human_bytes(p.workspace_bytes).c_str(),
                human_bytes(p.lower_bound_bytes).c_str(), human_bytes(p.naive_bytes).c_str(),
                human_bytes(p.total_bytes()).c_str(), ratio(p));
  }
}

void print_csv(const std::vector<Row>& rows) {
  std::printf(
      "model,size,channel_multiplier,narrow,batch,precision,strategy,weights_bytes,arena_bytes,workspace_bytes,"
      "lower_bound_bytes,naive_bytes,total_bytes,arena_over_lower_bound\n");
  for (const Row& r : rows) {
    const MemoryPlan& p = r.plan;
    std::printf("%s,%d,%d,%g,%d,%s,%s,%zu,%zu,%zu,%zu,%zu,%zu,%.6f\n", r.model.c_str(), r.cfg.size,
                r.cfg.channel_multiplier, r.cfg.narrow, r.cfg.batch, r.precision.c_str(), p.strategy.c_str(),
                p.weights_bytes, p.arena_bytes, p.workspace_bytes, p.lower_bound_bytes, p.naive_bytes, p.total_bytes(),
                ratio(p));
  }
}

void print_single(const Row& r, const std::vector<Row>& strategies, const char* device) {
  const MemoryPlan& p = r.plan;
  std::printf("%s\n", r.cfg.describe().c_str());
  std::printf("  ops %zu, tensors %zu, arena buffers %zu, in-place ops %d\n", r.ops, r.tensors, p.buffers.size(),
              p.inplace_count);
  print_plan(p, device);
  if (r.detail.transformed) print_transform(r.detail);
  for (const Row& s : strategies) print_strategy(s.plan);
}

// The GPEN configuration asked for: from the converted model (-m), or --size and the width options;
// batch from --batch.
struct GpenBase {
  std::string name = "gpen";
  GpenConfig cfg;
};

GpenBase gpen_base(const PlanArgs& a) {
  GpenBase b;
  if (!a.model.empty()) {
    GpwFile f = GpwFile::open(a.model);
    b.cfg = gpen_config_from_gpw(f);
    b.name = f.path();
  } else {
    b.cfg.size = a.size;
    b.cfg.channel_multiplier = a.channel_multiplier;
    b.cfg.narrow = a.narrow;
  }
  b.cfg.batch = a.batch;
  return b;
}

// The restore pipeline: the detector runs, then the generator, never both at once, so one arena
// (and one workspace) of the larger size serves both.
void run_pipeline_plan(const PlanArgs& a, const PlanDevice& dev) {
  RetinaFaceBackbone bb = parse_retinaface_backbone(a.arch == "retinaface-mnet" ? "mobilenet0.25" : "resnet50");
  auto [w, h] = parse_input_size(a.input_size);
  const std::string strategy = a.strategy == "all" ? "" : a.strategy;
  RetinaFaceGraph rg = build_retinaface_graph(bb, h, w);
  Planned det = plan_with_transforms(rg.graph, dev.ws, plan_options(a, strategy));

  const auto [name, c] = gpen_base(a);
  Planner planner(a, dev);
  Row gen = planner.plan(name, c, a.precision, strategy);

  SharedMemory joint = shared_memory({&det.plan, &gen.plan});
  const size_t sep_arena = det.plan.arena_bytes + gen.plan.arena_bytes;
  const size_t sep_ws = det.plan.workspace_bytes + gen.plan.workspace_bytes;
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
  if (a.json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  auto mb = [](size_t b) { return human_bytes(double(b)); };
  std::printf("Pipeline: RetinaFace %s at %dx%d (fp32), then %s (workspace for the %s backend)\n",
              retinaface_backbone_name(bb), w, h, gen.cfg.describe().c_str(), dev.name.c_str());
  auto line = [](const char* label, const std::string& weights, const std::string& arena, const std::string& lower,
                 const std::string& workspace, const std::string& total) {
    std::printf("  %-10s %10s %10s %10s %10s %10s\n", label, weights.c_str(), arena.c_str(), lower.c_str(),
                workspace.c_str(), total.c_str());
  };
  line("", "weights", "arena", "lower bnd", "workspace", "total");
  for (auto [label, p] : {std::pair<const char*, const MemoryPlan*>{"detector", &det.plan}, {"generator", &gen.plan}})
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

void run_plan(PlanArgs a) {
  const PlanDevice dev = plan_device(a.device);
  if (a.pipeline) return run_pipeline_plan(a, dev);
  if (a.arch == "retinaface-r50" || a.arch == "retinaface-mnet") return run_retinaface_plan(a, dev);
  Planner planner(a, dev);
  GPEN_CHECK(!a.model.empty() || a.arch == "gpen",
             "unknown --arch '" + a.arch + "' (known: gpen, retinaface-r50, retinaface-mnet)");
  const auto [name, base] = gpen_base(a);

  struct Model { std::string name; GpenConfig cfg; };
  std::vector<Model> models;
  if (a.official) {
    auto off = [](int s, int cm, double n) {
      GpenConfig c;
      c.size = s;
      c.channel_multiplier = cm;
      c.narrow = n;
      return c;
    };
    models = {{"GPEN-BFR-256", off(256, 1, 0.5)}, {"GPEN-BFR-512", off(512, 2, 1)}, {"GPEN-BFR-1024", off(1024, 2, 1)}};
    if (a.batches.empty()) a.batches = {1, 4, 8};
    if (a.precisions.empty()) a.precisions = {"fp32", "fp16"};
  } else {
    std::vector<int> sizes = a.sizes;
    if (a.sweep)
      for (int s = 16; s <= 2048; s *= 2) sizes.push_back(s);
    if (sizes.empty()) sizes = {base.size};
    for (int s : sizes) {
      GpenConfig c = base;
      c.size = s;
      models.push_back({name, c});
    }
  }
  if (a.batches.empty()) a.batches = {a.batch};
  if (a.precisions.empty()) a.precisions = {a.precision};
  std::vector<std::string> strategies;
  if (a.strategy == "all")
    strategies = strategy_names();
  else
    strategies = {a.strategy};

  if (!a.max_batch_for.empty()) {
    size_t budget = parse_bytes(a.max_batch_for);
    nlohmann::json out = nlohmann::json::array();
    for (const auto& m : models)
      for (const auto& prec : a.precisions) {
        // Total memory grows with the batch (arena linearly), so a doubling then bisection finds it.
        auto total = [&](int b) {
          GpenConfig c = m.cfg;
          c.batch = b;
          return planner.plan(m.name, c, prec, a.strategy == "all" ? "" : a.strategy).plan.total_bytes();
        };
        int lo = 0, hi = 1;
        while (hi <= 4096 && total(hi) <= budget) {
          lo = hi;
          hi *= 2;
        }
        hi = std::min(hi, 4097);
        while (hi - lo > 1) {
          int mid = (lo + hi) / 2;
          (total(mid) <= budget ? lo : hi) = mid;
        }
        out.push_back({{"model", m.name}, {"size", m.cfg.size}, {"precision", prec}, {"budget_bytes", budget},
                       {"max_batch", lo}, {"total_bytes_at_max", lo ? total(lo) : 0}});
        if (!a.json)
          std::printf("%s size %d %s: largest batch within %s is %d%s\n", m.name.c_str(), m.cfg.size, prec.c_str(),
                      human_bytes(double(budget)).c_str(), lo,
                      lo ? (" (total " + human_bytes(double(total(lo))) + ")").c_str() : " (not even one face fits)");
      }
    if (a.json) std::cout << out.dump(2) << "\n";
    return;
  }

  std::vector<Row> rows;
  for (const auto& m : models)
    for (int b : a.batches)
      for (const auto& prec : a.precisions)
        for (const auto& s : strategies) {
          GpenConfig c = m.cfg;
          c.batch = b;
          rows.push_back(planner.plan(m.name, c, prec, s));
        }

  if (!a.plot.empty()) {
    std::vector<Series> series;
    for (const auto& s : a.strategy == "all" ? strategy_names() : std::vector<std::string>{a.strategy}) {
      Series ser{s.empty() ? "best" : s, {}, {}};
      Series lb{"lower bound", {}, {}};
      for (int sz = 16; sz <= 2048; sz *= 2) {
        GpenConfig c = base;
        c.size = sz;
        c.batch = a.batches.front();
        Row r = planner.plan(name, c, a.precisions.front(), s);
        ser.x.push_back(sz);
        ser.y.push_back(double(r.plan.arena_bytes));
        lb.x.push_back(sz);
        lb.y.push_back(double(r.plan.lower_bound_bytes));
        if (&s == &a.strategy) break;
      }
      series.push_back(ser);
      if (series.size() == 1) series.insert(series.begin(), lb);
    }
    write_text_file(a.plot, svg_line_chart("GPEN arena per resolution (batch " + std::to_string(a.batches.front()) +
                                               ", " + a.precisions.front() + ")",
                                           "resolution", series));
    std::fprintf(stderr, "wrote %s\n", a.plot.c_str());
  }
  if (!a.plot_lifetimes.empty()) {
    const Row& r = rows.front();
    Row again = planner.plan(r.model, r.cfg, r.precision, strategies.front());
    write_text_file(a.plot_lifetimes, svg_lifetimes(r.cfg.describe() + ", " + again.plan.strategy, again.plan));
    std::fprintf(stderr, "wrote %s\n", a.plot_lifetimes.c_str());
  }

  const bool single = models.size() == 1 && a.batches.size() == 1 && a.precisions.size() == 1;
  if (a.csv) return print_csv(rows);
  if (single) {
    // One configuration: the detailed report, with every strategy when asked for "all".
    Row best = a.strategy == "all" ? planner.plan(models[0].name, rows[0].cfg, a.precisions[0], "") : rows[0];
    if (a.json) {
      nlohmann::json j = row_json(best, false);
      j["device"] = planner.device();
      if (a.strategy == "all") {
        nlohmann::json list = nlohmann::json::array();
        for (const Row& r : rows) list.push_back(strategy_json(r.plan));
        j["strategies"] = list;
      }
      if (a.tensors) {
        planner.plan(models[0].name, rows[0].cfg, a.precisions[0], a.strategy == "all" ? "" : a.strategy);
        const Graph& g = planner.last_graph();
        nlohmann::json list = nlohmann::json::array();
        for (size_t t = 0; t < g.tensors().size(); ++t) {
          const TensorDesc& d = g.tensor(static_cast<int>(t));
          if (best.plan.tensor_offset[t] < 0) continue;
          list.push_back({{"name", d.name},
                          {"shape", std::vector<int64_t>(d.shape.d.begin(), d.shape.d.begin() + d.shape.rank)},
                          {"dtype", dtype_name(d.dtype)},
                          {"bytes", d.bytes()},
                          {"offset", best.plan.tensor_offset[t]}});
        }
        j["tensor_offsets"] = list;
      }
      std::cout << j.dump(2) << "\n";
    } else {
      print_single(best, a.strategy == "all" ? rows : std::vector<Row>{}, planner.device());
    }
    return;
  }
  if (a.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const Row& r : rows) list.push_back(row_json(r));
    std::cout << list.dump(2) << "\n";
    return;
  }
  std::printf("Planned memory (workspace for the %s backend)\n", planner.device());
  print_table(rows);
}

PlanArgs g_args;

Command reg(
    "plan", "Memory plan of a model (weights, arena, workspace, lower bound) without running it",
    [](CLI::App& sub) {
      sub.add_option("--arch", g_args.arch, "Architecture: gpen, retinaface-r50, retinaface-mnet")->capture_default_str();
      sub.add_option("--input-size", g_args.input_size, "RetinaFace input WIDTHxHEIGHT")->capture_default_str();
      sub.add_option("-m,--model", g_args.model, "Take the configuration from a converted model (.gpw)")
          ->check(CLI::ExistingFile);
      sub.add_option("--size", g_args.size, "GPEN resolution (power of two, 16..2048)")->capture_default_str();
      sub.add_option("--sizes", g_args.sizes, "Several resolutions (sweep table)")->delimiter(',');
      sub.add_flag("--sweep", g_args.sweep, "All resolutions 16..2048");
      sub.add_option("--channel-multiplier", g_args.channel_multiplier, "GPEN channel multiplier")->capture_default_str();
      sub.add_option("--narrow", g_args.narrow, "GPEN narrow factor")->capture_default_str();
      sub.add_option("--batch", g_args.batch, "Faces per run")->capture_default_str()->check(CLI::PositiveNumber);
      sub.add_option("--batches", g_args.batches, "Several batch sizes (sweep table)")->delimiter(',');
      sub.add_option("--device", g_args.device,
                     "Backend whose workspace the plan counts: cpu or cuda (cuda needs CUDA compiled in, not a GPU)")
          ->capture_default_str();
      sub.add_option("--precision", g_args.precision, "Activation and weight precision: fp32, fp16, bf16")
          ->capture_default_str();
      sub.add_option("--precisions", g_args.precisions, "Several precisions (sweep table)")->delimiter(',');
      sub.add_option("--strategy", g_args.strategy, "Planner strategy, or 'all' to compare them (default: the best)");
      sub.add_flag("--json", g_args.json, "Print JSON");
      sub.add_flag("--csv", g_args.csv, "Print CSV (one row per configuration and strategy)");
      sub.add_flag("--tensors", g_args.tensors, "With --json: list every arena tensor with its offset");
      sub.add_flag("--official", g_args.official,
                   "Table of the released GPEN-BFR-256/512/1024 at batch 1, 4, 8 in fp32 and fp16");
      sub.add_option("--max-batch-for", g_args.max_batch_for,
                     "Largest batch whose total (weights + arena + workspace) fits this much memory, e.g. 8GiB");
      sub.add_flag("--remat", g_args.remat,
                   "Rematerialize: recompute cheap tensors instead of keeping them alive across a long gap");
      sub.add_flag("--reorder", g_args.reorder, "Look for an execution order with a lower liveness peak");
      sub.add_option("--remat-max-flops", g_args.remat_max_flops,
                     "Recomputation allowed by --remat, in percent of the model's FLOPs")
          ->capture_default_str()
          ->check(CLI::Range(0.0, 100.0));
      sub.add_flag("--pipeline", g_args.pipeline,
                   "Plan the restore pipeline: the detector (--arch retinaface-r50|retinaface-mnet, --input-size) "
                   "and GPEN (--size or -m, --batch, --precision) sharing one arena");
      sub.add_option("--plot", g_args.plot, "Write an SVG chart of arena versus resolution per strategy");
      sub.add_option("--plot-lifetimes", g_args.plot_lifetimes,
                     "Write an SVG chart of the plan's tensor lifetimes and offsets");
      sub.callback([] { run_plan(g_args); });
    },
    10);

}  // namespace
}  // namespace gpen::cli
