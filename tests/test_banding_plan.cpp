// Banded execution at plan level (engine/plan/banding.h) on the released sizes: the arenas the
// search reaches under byte budgets, the FLOPs that costs, batch 8. Nothing runs; slow only
// because each candidate banding of a 2048 graph is thousands of nodes to plan.
#include <doctest/doctest.h>

#include "engine/models/gpen.h"
#include "engine/plan/banding.h"
#include "engine/plan/memory_plan.h"
#include "engine/runtime/backend.h"

using namespace gpen;

namespace {

GpenConfig released(int size, DType t, int batch = 1) {
  GpenConfig c;
  c.size = size;
  if (size == 256) c.channel_multiplier = 1, c.narrow = 0.5;
  c.act_dtype = c.weight_dtype = t;
  c.batch = batch;
  return c;
}

constexpr double MiB = 1024.0 * 1024.0;

}  // namespace

// Plan level (nothing runs): what the search reaches on the released sizes in fp16 at batch 1.
// The asserted figures are the ones the search reaches (docs/memory.md): with carried halos and
// the modconv row crops (same-padded and transposed: every banded row computed once), the
// issue's targets GPEN-512 <= 24 MiB, GPEN-1024 <= 48 MiB and GPEN-2048 <= 96 MiB at <= 10 % extra
// FLOPs (reached: 21.9 MiB at +3.7 %, 36.0 MiB at +6.1 %, 92.5 MiB at +5.5 %), and below them
// GPEN-512 within 18 MiB, GPEN-1024 within 34 MiB and GPEN-2048 within 82 MiB at <= 10 %; 16 MiB is
// reported as not reachable for GPEN-512.
TEST_CASE("banding: plan-level arenas of GPEN-512/1024/2048 in fp16 under budgets") {
  struct Case {
    int size;
    double budget_mib, max_extra;  // fits this arena with at most this extra FLOP fraction
  } cases[] = {{512, 52, 0.02}, {512, 36, 0.15}, {512, 28, 0.45}, {1024, 64, 0.10},
               {1024, 52, 0.30}, {2048, 140, 0.10}, {2048, 104, 0.35},
               // Carried halos (engine/plan/banding_carry.h): the targets, docs/memory.md.
               {512, 24, 0.10}, {1024, 48, 0.10}, {2048, 96, 0.10},
               {512, 18, 0.10}, {1024, 34, 0.10}, {2048, 82, 0.10}};
  for (const Case& k : cases) {
    CAPTURE(k.size);
    CAPTURE(k.budget_mib);
    GpenGraph gg = build_gpen_graph(released(k.size, DType::f16));
    const size_t before = liveness_lower_bound(gg.graph);
    BandingSearch s;
    s.budget = static_cast<size_t>(k.budget_mib * MiB);
    BandingResult r = choose_banding(gg.graph, s);
    REQUIRE(r.applied);
    MESSAGE("GPEN-", k.size, " fp16 within ", k.budget_mib, " MiB: ", r.bands, " bands from ", r.band_res, " (kept to ",
            r.keep_res, "), lower bound ", r.lower_bound_after / MiB, " MiB (from ", before / MiB, "), +",
            100 * r.extra_flops_fraction(), "% FLOPs");
    CHECK(r.lower_bound_before == before);
    CHECK(r.lower_bound_after <= s.budget);
    CHECK(r.extra_flops_fraction() <= k.max_extra);
    CHECK(liveness_lower_bound(gg.graph) == r.lower_bound_after);
    // The placed arena fits the budget too (it may sit a few percent above the bound).
    auto be = make_cpu_backend();
    MemoryPlan p = plan_memory(gg.graph, [&](const Graph& g, const Node& n) { return be->workspace_bytes(g, n); });
    MESSAGE("  arena ", p.arena_bytes / MiB, " MiB");
    CHECK(p.arena_bytes <= s.budget);
    CHECK(p.arena_bytes >= r.lower_bound_after);
  }
  // A budget nothing reaches is reported as such, the graph left as it was.
  GpenGraph gg = build_gpen_graph(released(512, DType::f16));
  const size_t nodes = gg.graph.nodes().size();
  BandingSearch s;
  s.budget = 16 << 20;
  size_t smallest = 0;
  BandingResult r = choose_banding(gg.graph, s, true, &smallest);
  CHECK_FALSE(r.applied);
  CHECK(gg.graph.nodes().size() == nodes);
  CHECK(smallest < liveness_lower_bound(gg.graph));  // bounds below it exist, but not an arena
}

TEST_CASE("banding: batch 8 GPEN-512 fp16 within 400 MiB in total") {
  GpenGraph gg = build_gpen_graph(released(512, DType::f16, 8));
  auto be = make_cpu_backend();
  WorkspaceFn ws = [&](const Graph& g, const Node& n) { return be->workspace_bytes(g, n); };
  const MemoryPlan plain = plan_memory(gg.graph, ws);
  const size_t total = 400 * (1 << 20);
  CHECK(plain.total_bytes() > total);
  BandingSearch s;
  s.budget = total - plain.weights_bytes - plain.workspace_bytes;
  BandingResult r = choose_banding(gg.graph, s);
  REQUIRE(r.applied);
  const MemoryPlan p = plan_memory(gg.graph, ws);
  MESSAGE("GPEN-512 fp16 batch 8: total ", p.total_bytes() / MiB, " MiB (arena ", p.arena_bytes / MiB, " MiB, from ",
          plain.arena_bytes / MiB, "), ", r.bands, " bands from ", r.band_res, ", +", 100 * r.extra_flops_fraction(),
          "% FLOPs");
  CHECK(p.total_bytes() <= total);
  CHECK(r.extra_flops_fraction() < 0.25);
}
