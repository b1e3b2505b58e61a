// gpen plan: the memory plan of a model for a concrete (size, batch, precision), from the
// architecture alone; no weights are read.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/cli.h"
#include "apps/format.h"
#include "engine/backend.h"
#include "engine/memory_plan.h"
#include "engine/models/gpen.h"

namespace gpen::cli {
namespace {

struct PlanArgs {
  std::string arch = "gpen";
  int size = 512;
  int channel_multiplier = 2;
  double narrow = 1.0;
  int batch = 1;
  std::string precision = "fp32";
  std::string strategy;
  bool json = false;
  bool official = false;
  bool tensors = false;
};

GpenConfig gpen_config(const PlanArgs& a, int size, int cm, double narrow, int batch, DType dt) {
  GpenConfig c;
  c.size = size;
  c.channel_multiplier = cm;
  c.narrow = narrow;
  c.batch = batch;
  c.act_dtype = dt;
  c.weight_dtype = dt;
  (void)a;
  return c;
}

nlohmann::json plan_json(const Graph& g, const MemoryPlan& p, bool with_tensors) {
  nlohmann::json j;
  j["strategy"] = p.strategy;
  j["weights_bytes"] = p.weights_bytes;
  j["arena_bytes"] = p.arena_bytes;
  j["lower_bound_bytes"] = p.lower_bound_bytes;
  j["naive_bytes"] = p.naive_bytes;
  j["workspace_bytes"] = p.workspace_bytes;
  j["total_bytes"] = p.total_bytes();
  j["arena_over_lower_bound"] = p.lower_bound_bytes ? double(p.arena_bytes) / double(p.lower_bound_bytes) : 1.0;
  j["ops"] = g.nodes().size();
  j["tensors"] = g.tensors().size();
  j["buffers"] = p.buffers.size();
  j["inplace_ops"] = p.inplace_count;
  j["plan_ms"] = p.plan_ms;
  if (with_tensors) {
    nlohmann::json list = nlohmann::json::array();
    for (size_t t = 0; t < g.tensors().size(); ++t) {
      const TensorDesc& d = g.tensor(static_cast<int>(t));
      if (p.tensor_offset[t] < 0) continue;
      list.push_back({{"name", d.name}, {"shape", std::vector<int64_t>(d.shape.d.begin(), d.shape.d.begin() + d.shape.rank)},
                      {"dtype", dtype_name(d.dtype)}, {"bytes", d.bytes()}, {"offset", p.tensor_offset[t]}});
    }
    j["tensor_offsets"] = list;
  }
  return j;
}

void run_plan(const PlanArgs& a) {
  DType dt = parse_dtype(a.precision);
  GPEN_CHECK(a.arch == "gpen", "unknown --arch '" + a.arch + "' (known: gpen)");
  auto backend = make_cpu_backend();
  WorkspaceFn ws = [&](const Graph& g, const Node& n) { return backend->workspace_bytes(g, n); };

  if (a.official) {
    struct Off { const char* name; int size, cm; double n; };
    const Off models[] = {{"GPEN-BFR-256", 256, 1, 0.5}, {"GPEN-BFR-512", 512, 2, 1.0}, {"GPEN-BFR-1024", 1024, 2, 1.0}};
    nlohmann::json rows = nlohmann::json::array();
    if (!a.json) {
      std::printf("Planned memory of the released GPEN models (strategy: %s; workspace for the CPU backend)\n",
                  a.strategy.empty() ? all_strategies().front()->name() : a.strategy.c_str());
      std::printf("%-14s %5s %6s %11s %11s %11s %11s %11s %7s\n", "model", "batch", "prec", "weights", "arena",
                  "lower bound", "naive", "total", "ratio");
    }
    for (const Off& m : models)
      for (const char* prec : {"fp32", "fp16"})
        for (int batch : {1, 4, 8}) {
          GpenGraph gg = build_gpen_graph(gpen_config(a, m.size, m.cm, m.n, batch, parse_dtype(prec)));
          MemoryPlan p = plan_memory(gg.graph, ws, {a.strategy});
          if (a.json) {
            nlohmann::json j = plan_json(gg.graph, p, false);
            j["model"] = m.name;
            j["batch"] = batch;
            j["precision"] = prec;
            rows.push_back(j);
          } else {
            std::printf("%-14s %5d %6s %11s %11s %11s %11s %11s %7.3f\n", m.name, batch, prec,
                        human_bytes(p.weights_bytes).c_str(), human_bytes(p.arena_bytes).c_str(),
                        human_bytes(p.lower_bound_bytes).c_str(), human_bytes(p.naive_bytes).c_str(),
                        human_bytes(p.total_bytes()).c_str(), double(p.arena_bytes) / p.lower_bound_bytes);
          }
        }
    if (a.json) std::cout << rows.dump(2) << "\n";
    return;
  }

  GpenGraph gg = build_gpen_graph(gpen_config(a, a.size, a.channel_multiplier, a.narrow, a.batch, dt));
  const Graph& g = gg.graph;
  bool all = a.strategy == "all";
  MemoryPlan best = plan_memory(g, ws, {all ? "" : a.strategy});
  nlohmann::json j = plan_json(g, best, a.tensors);
  j["arch"] = a.arch;
  j["config"] = {{"size", a.size}, {"channel_multiplier", a.channel_multiplier}, {"narrow", a.narrow}};
  j["batch"] = a.batch;
  j["precision"] = a.precision;
  j["device"] = backend->name();
  if (all) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& s : all_strategies()) {
      MemoryPlan p = plan_memory(g, ws, {s->name()});
      list.push_back({{"name", s->name()}, {"arena_bytes", p.arena_bytes}, {"plan_ms", p.plan_ms},
                      {"arena_over_lower_bound", double(p.arena_bytes) / double(p.lower_bound_bytes)}});
    }
    j["strategies"] = list;
  }
  if (a.json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  GpenConfig c = gpen_config(a, a.size, a.channel_multiplier, a.narrow, a.batch, dt);
  std::printf("%s\n", c.describe().c_str());
  std::printf("  ops %zu, tensors %zu, arena buffers %zu, in-place ops %d\n", g.nodes().size(), g.tensors().size(),
              best.buffers.size(), best.inplace_count);
  std::printf("  weights      %12zu  (%s)\n", best.weights_bytes, human_bytes(best.weights_bytes).c_str());
  std::printf("  arena        %12zu  (%s, strategy %s)\n", best.arena_bytes, human_bytes(best.arena_bytes).c_str(),
              best.strategy.c_str());
  std::printf("  lower bound  %12zu  (%s, arena/lower bound %.4f)\n", best.lower_bound_bytes,
              human_bytes(best.lower_bound_bytes).c_str(), double(best.arena_bytes) / best.lower_bound_bytes);
  std::printf("  naive        %12zu  (%s)\n", best.naive_bytes, human_bytes(best.naive_bytes).c_str());
  std::printf("  workspace    %12zu  (%s, %s backend)\n", best.workspace_bytes, human_bytes(best.workspace_bytes).c_str(),
              backend->name());
  std::printf("  total        %12zu  (%s)\n", best.total_bytes(), human_bytes(best.total_bytes()).c_str());
  if (all)
    for (const auto& s : j["strategies"])
      std::printf("  strategy %-14s arena %12zu  ratio %.4f  %.2f ms\n", s["name"].get<std::string>().c_str(),
                  s["arena_bytes"].get<size_t>(), s["arena_over_lower_bound"].get<double>(), s["plan_ms"].get<double>());
}

PlanArgs g_args;

Command reg(
    "plan", "Memory plan of a model (weights, arena, workspace, lower bound) without running it",
    [](CLI::App& sub) {
      sub.add_option("--arch", g_args.arch, "Architecture: gpen")->capture_default_str();
      sub.add_option("--size", g_args.size, "GPEN resolution (power of two, 16..2048)")->capture_default_str();
      sub.add_option("--channel-multiplier", g_args.channel_multiplier, "GPEN channel multiplier")->capture_default_str();
      sub.add_option("--narrow", g_args.narrow, "GPEN narrow factor")->capture_default_str();
      sub.add_option("--batch", g_args.batch, "Faces per run")->capture_default_str()->check(CLI::PositiveNumber);
      sub.add_option("--precision", g_args.precision, "Activation and weight precision: fp32, fp16, bf16")
          ->capture_default_str();
      sub.add_option("--strategy", g_args.strategy, "Planner strategy, or 'all' to compare them (default: the best)");
      sub.add_flag("--json", g_args.json, "Print JSON");
      sub.add_flag("--tensors", g_args.tensors, "With --json: list every arena tensor with its offset");
      sub.add_flag("--official", g_args.official,
                   "Table of the released GPEN-BFR-256/512/1024 at batch 1, 4, 8 in fp32 and fp16");
      sub.callback([] { run_plan(g_args); });
    },
    10);

}  // namespace
}  // namespace gpen::cli
