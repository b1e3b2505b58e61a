// Banded execution in `gpen plan` reports (engine/plan/banding.h): the `bands` object of the JSON,
// the text lines, and the --plot-bands chart of the arena against the band height.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "engine/core/bytes.h"
#include "reports/plan.h"
#include "reports/svg.h"

namespace gpen::report {

namespace {

std::string no_fit_message(const TransformReport& x, size_t budget) {
  return "no banding fits an arena of " + human_bytes(double(budget)) + " (the smallest lower bound any banding reached is " +
         human_bytes(double(x.banding_smallest_bound)) + ")";
}

}  // namespace

nlohmann::json bands_json(const Planned& p, size_t budget) {
  const TransformReport& x = p.xf;
  const BandingResult& b = x.banding;
  nlohmann::json j = {{"applied", b.applied}, {"fits", x.banding_fits}};
  if (budget) j["budget_bytes"] = budget;
  if (!b.applied) {
    j["smallest_bound_bytes"] = x.banding_smallest_bound;
    j["message"] = x.banding_fits ? "the graph fits the budget unbanded" : no_fit_message(x, budget);
    return j;
  }
  j.update({{"band_resolution", b.band_res},
            {"kept_resolution", b.keep_res},
            {"count", b.bands},
            {"encoder_bands", b.encoder_bands},
            {"boundaries", b.boundaries},
            {"max_band_rows", b.max_band_rows},
            {"max_computed_rows_at_output", b.max_computed_rows},
            {"kept_feature_bytes", b.kept_bytes},
            {"lower_bound_before_bytes", b.lower_bound_before},
            {"lower_bound_bytes", b.lower_bound_after},
            {"arena_bytes", p.plan.arena_bytes},
            {"flops_before", b.flops_before},
            {"flops_after", b.flops_after},
            {"extra_flops_fraction", b.extra_flops_fraction()},
            {"halos", b.carried ? "carried" : "recomputed"}});
  if (b.carried) {
    // The stages (tensors) that carry rows from one band to the next, and how many at most.
    nlohmann::json stages = nlohmann::json::object();
    for (const auto& [name, rows] : b.carried_rows) stages[name] = rows;
    j["carried_stages"] = stages;
    j["carry_bytes"] = b.carry_bytes;
    j["modconv_step_rows"] = b.stage_rows;
  }
  return j;
}

void print_bands(const Planned& p, size_t budget) {
  const TransformReport& x = p.xf;
  const BandingResult& b = x.banding;
  if (!b.applied) {
    std::printf("    banding      %s\n",
                x.banding_fits ? "none needed: the graph fits the budget unbanded" : no_fit_message(x, budget).c_str());
    return;
  }
  std::printf("    banding      %d bands of <= %lld output rows from %dx%d (encoder: %d bands), features in (%d, %d] "
              "kept (%s), the rest recomputed per band\n",
              b.bands, static_cast<long long>(b.max_band_rows), b.band_res, b.band_res, b.encoder_bands, b.band_res,
              b.keep_res, human_bytes(double(b.kept_bytes)).c_str());
  if (b.carried)
    std::printf("                 halos carried from band to band by %zu stages (%s of carried rows)\n",
                b.carried_rows.size(), human_bytes(double(b.carry_bytes)).c_str());
  else
    std::printf("                 halos recomputed per band\n");
  std::printf("                 lower bound %s -> %s, +%.2f%% FLOPs (%.3f -> %.3f GFLOP)\n",
              human_bytes(double(b.lower_bound_before)).c_str(), human_bytes(double(b.lower_bound_after)).c_str(),
              100.0 * b.extra_flops_fraction(), b.flops_before * 1e-9, b.flops_after * 1e-9);
}

void write_band_plot(const PlanArgs& a, const PlanDevice& dev) {
  struct Size {
    const char* name;
    int size, cm;
    double narrow;
  };
  const Size sizes[] = {{"GPEN-BFR-256", 256, 1, 0.5}, {"GPEN-BFR-512", 512, 2, 1}, {"GPEN-BFR-1024", 1024, 2, 1},
                        {"GPEN-2048", 2048, 2, 1}};
  std::vector<Series> series;
  for (const Size& s : sizes) {
    GpenConfig c;
    c.size = s.size;
    c.channel_multiplier = s.cm;
    c.narrow = s.narrow;
    c.batch = a.batch;
    c.act_dtype = c.weight_dtype = parse_dtype(a.precision);
    for (bool carry : {false, true}) {
      Series ser{std::string(s.name) + (carry ? ", carried halos" : ", recomputed halos"), {}, {}};
      for (int n : {2, 4, 8, 16, 32, 64}) {
        GpenGraph gg = build_gpen_graph(c);
        BandingSearch bs;
        bs.forced_bands = n;
        bs.try_carry = carry;
        bs.try_recompute = !carry;
        BandingResult r = choose_banding(gg.graph, bs);
        if (!r.applied) continue;
        MemoryPlan plan = plan_memory(gg.graph, dev.ws);
        ser.x.push_back(double(r.max_band_rows));
        ser.y.push_back(double(plan.arena_bytes));
      }
      series.push_back(ser);
    }
  }
  write_text_file(a.plot_bands, svg_line_chart("GPEN arena against band height (lowest bound per height, batch " +
                                                   std::to_string(a.batch) + ", " + a.precision + ")",
                                               "band height (output rows)", series));
  std::fprintf(stderr, "wrote %s\n", a.plot_bands.c_str());
}

}  // namespace gpen::report
