// `gpen plan` for GPEN: one configuration in detail, or a table over sizes, batches, precisions
// and strategies (text, CSV, JSON), the largest batch for a memory budget, and the SVG charts.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "engine/core/bytes.h"
#include "reports/plan.h"
#include "reports/svg.h"
#include "weights/gpw.h"

namespace gpen::report {

namespace {

int log2_of(int v) {
  int l = 0;
  while ((1 << l) < v) ++l;
  return l;
}

nlohmann::json row_json(const Row& r, bool brief = true) {
  const MemoryPlan& p = r.plan;
  nlohmann::json j = plan_json(p);
  j.update({{"model", r.model},
            {"arch", "gpen"},
            {"config", {{"size", r.cfg.size}, {"channel_multiplier", r.cfg.channel_multiplier}, {"narrow", r.cfg.narrow}}},
            {"batch", r.cfg.batch},
            {"precision", r.precision},
            {"weights_dtype", dtype_is_8bit_weight(r.cfg.quant8) ? dtype_name(r.cfg.quant8) : r.precision.c_str()}});
  if (dtype_is_8bit_weight(r.cfg.quant8)) {
    j["dense_dtype"] = dtype_is_8bit_weight(r.cfg.dense8) ? dtype_name(r.cfg.dense8) : r.precision.c_str();
    if (dtype_is_8bit_weight(r.cfg.dense8)) j["dense_layers"] = r.cfg.dense8_layers;
    j["group_size"] = r.cfg.q8_group;
  }
  if (r.cfg.output_size() != r.cfg.size) {
    j["config"]["out_size"] = r.cfg.out_size;
    j["noise_inputs"] = 2 * (log2_of(r.cfg.out_size) - log2_of(r.cfg.size));  // FullGenerator_SR
  }
  if (r.detail.transformed) j["transform"] = transform_json(r.detail);
  if (r.detail.xf.banding_requested) {
    j["bands"] = bands_json(r.detail, r.detail.arena_budget);
    j["extra_flops_fraction"] = r.detail.xf.banding.applied ? r.detail.xf.banding.extra_flops_fraction() : 0.0;
  }
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
}  // namespace

void apply_weights8_args(GpenConfig& c, const std::string& weights_dtype, const std::string& dense_dtype,
                         const std::string& dense_layers, int group_size) {
  if (!weights_dtype.empty()) {
    const DType q = parse_dtype(weights_dtype);
    GPEN_CHECK(q == DType::f32 || dtype_is_8bit_weight(q),
               "--weights-dtype must be int8, fp8 or fp32 (float weights), got '" + weights_dtype + "'");
    c.quant8 = q;
  }
  if (!dense_dtype.empty()) {
    const DType d = parse_dtype(dense_dtype);
    GPEN_CHECK(d == DType::f32 || dtype_is_8bit_weight(d),
               "--dense-dtype must be int8, fp8 or fp32 (float dense layers), got '" + dense_dtype + "'");
    GPEN_CHECK(d == DType::f32 || dtype_is_8bit_weight(c.quant8),
               "--dense-dtype int8|fp8 needs 8-bit conv weights (--weights-dtype int8|fp8 or an 8-bit -m file)");
    c.dense8 = d;
    c.dense8_layers = parse_dense8_layers(dense_layers);
  }
  if (group_size >= 0) {
    GPEN_CHECK(group_size == 0 || dtype_is_8bit_weight(c.quant8),
               "--group-size needs 8-bit weights (--weights-dtype int8|fp8 or an 8-bit -m file)");
    c.q8_group = group_size;
  }
}

GpenBase gpen_base(const PlanArgs& a) {
  GpenBase b;
  if (!a.model.empty()) {
    GpwFile f = GpwFile::open(a.model);
    b.cfg = gpen_config_from_gpw(f);
    if (dtype_is_8bit_weight(f.storage_dtype())) b.cfg.quant8 = f.storage_dtype();
    b.name = f.path();
  } else {
    b.cfg.size = a.size;
    b.cfg.channel_multiplier = a.channel_multiplier;
    b.cfg.narrow = a.narrow;
    b.cfg.out_size = a.out_size;
  }
  b.cfg.batch = a.batch;
  apply_weights8_args(b.cfg, a.weights_dtype, a.dense_dtype, a.dense_layers, a.group_size);
  return b;
}
void run_plan(PlanArgs a) {
  const PlanDevice dev = plan_device(a.device);
  if (a.pipeline) return run_pipeline_plan(a, dev);
  if (a.arch == "retinaface-r50" || a.arch == "retinaface-mnet") return run_retinaface_plan(a, dev);
  if (a.arch == "realesrnet") return run_realesrnet_plan(a, dev);
  if (a.arch == "parsenet") return run_parsenet_plan(a, dev);
  if (a.arch == "gfpgan") return run_gfpgan_plan(a, dev);
  if (a.arch == "codeformer") return run_codeformer_plan(a, dev);
  if (a.arch == "restoreformer") return run_restoreformer_plan(a, dev);
  Planner planner(a, dev);
  GPEN_CHECK(!a.model.empty() || a.arch == "gpen",
             "unknown --arch '" + a.arch +
                 "' (known: gpen, retinaface-r50, retinaface-mnet, realesrnet, parsenet, gfpgan, codeformer, restoreformer)");
  if (!a.sr_budget.empty()) return run_gpen_memory_budget_plan(a);
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
    if (a.json) emit_json(a, out);
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
  if (!a.plot_bands.empty()) write_band_plot(a, dev);
  if (!a.plot_lifetimes.empty()) {
    const Row& r = rows.front();
    Row again = planner.plan(r.model, r.cfg, r.precision, strategies.front());
    write_text_file(a.plot_lifetimes, svg_lifetimes(r.cfg.describe() + ", " + again.plan.strategy, again.plan));
    std::fprintf(stderr, "wrote %s\n", a.plot_lifetimes.c_str());
  }

  const bool single = models.size() == 1 && a.batches.size() == 1 && a.precisions.size() == 1;
  GPEN_CHECK(!a.roofline || (a.device == "cuda" && single && a.strategy != "all" && !a.csv),
             "gpen plan --roofline: needs --device cuda and one configuration (one size, batch and precision)");
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
      if (a.roofline) j["roofline"] = roofline_report(planner.last_graph(), dev.ws, false);
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
      emit_json(a, j);
    } else {
      print_single(best, a.strategy == "all" ? rows : std::vector<Row>{}, planner.device());
      if (a.roofline) roofline_report(planner.last_graph(), dev.ws, true);
    }
    return;
  }
  if (a.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const Row& r : rows) list.push_back(row_json(r));
    emit_json(a, list);
    return;
  }
  std::printf("Planned memory (workspace for the %s backend)\n", planner.device());
  print_table(rows);
}

}  // namespace gpen::report
