// Rematerialization (engine/plan/remat.h): GPEN's first encoder feature is recomputed from the input
// before the last decoder layers instead of living across the whole decoder. The transformed
// graph computes bit-identical output, and on GPEN-512 the lower bound drops by exactly what the
// shapes at the two peak steps predict.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/plan/memory_plan.h"
#include "engine/models/gpen_model.h"
#include "engine/plan/remat.h"
#include "kernels/cpu/ops.h"

using namespace gpen;

namespace {

int node_index(const Graph& g, const std::string& name) {
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (g.nodes()[i].name == name) return static_cast<int>(i);
  return -1;
}

int tensor_id(const Graph& g, const std::string& name) {
  for (size_t t = 0; t < g.tensors().size(); ++t)
    if (g.tensor(static_cast<int>(t)).name == name) return static_cast<int>(t);
  return -1;
}

bool reads(const Node& n, int t) {
  for (int i : n.inputs)
    if (i == t) return true;
  return false;
}

}  // namespace

TEST_CASE("remat: GPEN-512 recomputes ecd0 and its lower bound drops by the predicted amount") {
  GpenConfig c;  // GPEN-BFR-512: size 512, channel multiplier 2, fp32, batch 1
  GpenGraph gg = build_gpen_graph(c);
  Graph& g = gg.graph;
  const size_t before = liveness_lower_bound(g);
  PlanOptions o;
  o.rematerialize = true;
  TransformReport r = transform_for_memory(g, o);
  REQUIRE(r.recomputed == std::vector<std::string>{"ecd0"});
  // One 1x1 conv from 3 to 64 channels over 512 x 512 pixels.
  CHECK(r.remat_flops == 2.0 * 512 * 512 * 3 * 64);
  CHECK(r.model_flops > 2.5e11);
  CHECK(r.remat_flops / r.model_flops < 0.001);
  CHECK(r.lower_bound_before == before);
  CHECK(r.lower_bound_after == liveness_lower_bound(g));

  // Before: the peak is the last upsampling layer's blur, reading the transposed conv's output T
  // (513 x 513 x 64) and writing B (512 x 512 x 64), with e_0 (512 x 512 x 64) and the RGB skip
  // R (256 x 256 x 3) alive. After: e_0 is gone there; the peak moves to the last StyledConv,
  // which reads X and e_0' and writes Y (three 512 x 512 x 64 tensors) with R alive. A few
  // style and demodulation vectors (a few KiB) ride along at both steps.
  const double E = 512.0 * 512 * 64 * 4, T = 513.0 * 513 * 64 * 4, R = 256.0 * 256 * 3 * 4;
  const double small = 4096;
  CHECK(std::fabs(double(r.lower_bound_before) - (T + 2 * E + R)) <= small);
  CHECK(std::fabs(double(r.lower_bound_after) - (3 * E + R)) <= small);
  const double drop = double(r.lower_bound_before) - double(r.lower_bound_after);
  MESSAGE("GPEN-512 lower bound ", r.lower_bound_before, " -> ", r.lower_bound_after, " (", drop, " bytes)");
  CHECK(std::fabs(drop - (T - E)) <= 1024);  // 258 KiB

  // The copy runs right before the last StyledConv and both late readers use it.
  int copy = node_index(g, "ecd0.remat");
  REQUIRE(copy >= 0);
  CHECK(node_index(g, "generator.convs.13") == copy + 1);
  int e0 = tensor_id(g, "ecd0"), e0r = tensor_id(g, "ecd0.remat");
  REQUIRE(e0 >= 0);
  REQUIRE(e0r >= 0);
  CHECK(reads(g.nodes()[copy + 1], e0r));
  CHECK(reads(g.nodes()[node_index(g, "generator.to_rgbs.6")], e0r));
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (reads(g.nodes()[i], e0)) CHECK(g.nodes()[i].name == "ecd1.blur");

  // The planned arena follows the bound.
  auto be = make_cpu_backend();
  WorkspaceFn ws = [&](const Graph& gr, const Node& n) { return be->workspace_bytes(gr, n); };
  MemoryPlan p = plan_memory(g, ws);
  CHECK(p.arena_bytes == r.lower_bound_after);
}

TEST_CASE("remat: no recomputation beyond the FLOP allowance, none when not asked") {
  GpenConfig c;
  c.size = 64;
  c.narrow = 1.0 / 32;
  c.style_dim = 16;
  GpenGraph gg = build_gpen_graph(c);
  const size_t nodes = gg.graph.nodes().size();
  PlanOptions o;
  TransformReport none = transform_for_memory(gg.graph, o);
  CHECK(none.recomputed.empty());
  CHECK(none.lower_bound_after == none.lower_bound_before);
  o.rematerialize = true;
  o.remat_max_flops_fraction = 0;
  TransformReport zero = transform_for_memory(gg.graph, o);
  CHECK(zero.recomputed.empty());
  CHECK(zero.remat_flops == 0);
  CHECK(gg.graph.nodes().size() == nodes);
}

TEST_CASE("remat and reorder: a small GPEN gives bit-identical output on the CPU backend") {
  cpu::set_num_threads(1);
  GpenConfig c;
  c.size = 32;
  c.channel_multiplier = 1;
  c.narrow = 1.0 / 32;  // 16 channels everywhere
  c.style_dim = 16;
  auto be = make_cpu_backend();
  auto plain = GpenModel::synthetic(c, *be, 3);
  auto remat = GpenModel::synthetic(c, *be, 3);
  const int N = 2, S = c.size;
  plain->prepare(N);
  PlanOptions o;
  o.rematerialize = true;
  remat->prepare(N, o);
  const TransformReport& x = remat->transform_report();
  REQUIRE(x.recomputed == std::vector<std::string>{"ecd0"});
  CHECK(x.lower_bound_after < x.lower_bound_before);
  CHECK(remat->plan().lower_bound_bytes == x.lower_bound_after);
  CHECK(remat->plan().arena_bytes < plain->plan().arena_bytes);
  CHECK(remat->graph().nodes().size() == plain->graph().nodes().size() + 1);

  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> in(size_t(N) * S * S * 3), a(in.size()), b(in.size());
  for (auto& v : in) v = u(rng);
  plain->run(in.data(), a.data());
  remat->run(in.data(), b.data());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  // A short batch runs a smaller transformed plan inside the same arena.
  std::vector<float> a1(size_t(S) * S * 3), b1(a1.size());
  plain->run(1, in.data(), a1.data());
  remat->run(1, in.data(), b1.data());
  CHECK(std::memcmp(a1.data(), b1.data(), a1.size() * sizeof(float)) == 0);

  // Both transforms together.
  o.reorder = true;
  remat->prepare(N, o);
  CHECK(remat->transform_report().lower_bound_after <= x.lower_bound_after);
  std::fill(b.begin(), b.end(), 0.f);
  remat->run(in.data(), b.data());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}
