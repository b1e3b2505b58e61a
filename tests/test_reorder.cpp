// Execution-order exploration (engine/plan/reorder.h): any order it keeps is a valid topological order
// of the builder's graph, computes exactly the same output, and never has a higher liveness peak.
#include <doctest/doctest.h>

#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "engine/runtime/executor.h"
#include "engine/plan/memory_plan.h"
#include "engine/models/gpen_model.h"
#include "engine/models/retinaface.h"
#include "engine/plan/reorder.h"
#include "kernels/cpu/ops.h"

using namespace gpen;

namespace {

std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Two branches, each a wide 1x1 conv followed by a narrowing one, summed. The builder runs both
// wide convs first, so both wide tensors are alive together; finishing one branch before starting
// the other keeps only one alive.
struct TwoBranch {
  Graph g;
  int x = -1, y = -1;
  std::vector<std::vector<float>> data;
  WeightMap weights;
  static constexpr int64_t N = 1, H = 16, W = 16, C = 4, Wide = 64;
  TwoBranch() {
    x = g.input("x", DType::f32, Shape{N, H, W, C});
    auto weight = [&](const std::string& name, const Shape& s) {
      int t = g.weight(name, DType::f32, s);
      data.push_back(random_vec(static_cast<size_t>(s.numel()), static_cast<uint32_t>(data.size() + 7)));
      weights[name] = make_view(data.back().data(), DType::f32, s);
      return t;
    };
    Conv2dParams p;
    p.act = Activation::leaky(0.2f);
    int a1 = g.conv2d(x, weight("wa1", Shape{1, 1, C, Wide}), -1, p, -1, -1, "a1");
    int b1 = g.conv2d(x, weight("wb1", Shape{1, 1, C, Wide}), -1, p, -1, -1, "b1");
    int a2 = g.conv2d(a1, weight("wa2", Shape{1, 1, Wide, C}), -1, p, -1, -1, "a2");
    int b2 = g.conv2d(b1, weight("wb2", Shape{1, 1, Wide, C}), -1, p, -1, -1, "b2");
    y = g.add(a2, b2, AddParams{}, -1, "y");
    g.mark_output(y);
  }
};

std::vector<float> run_graph(const Graph& g, const WeightMap& w, int x, int y, const std::vector<float>& in) {
  auto be = make_cpu_backend();
  WorkspaceFn ws = [&](const Graph& gg, const Node& n) { return be->workspace_bytes(gg, n); };
  MemoryPlan plan = plan_memory(g, ws);
  Executor ex(g, plan, *be, w);
  ex.set_input(x, in.data(), in.size() * sizeof(float));
  ex.run();
  std::vector<float> out(static_cast<size_t>(g.tensor(y).shape.numel()));
  ex.get_output(y, out.data(), out.size() * sizeof(float));
  return out;
}

}  // namespace

TEST_CASE("reorder: finds the better order of a two-branch graph and computes the same output") {
  cpu::set_num_threads(1);
  TwoBranch net;
  const size_t wide = TwoBranch::N * TwoBranch::H * TwoBranch::W * TwoBranch::Wide * sizeof(float);
  const size_t narrow = wide / (TwoBranch::Wide / TwoBranch::C);
  const size_t before = liveness_lower_bound(net.g);
  // Builder order: at b1, x + a1 + b1 are alive.
  CHECK(before == narrow + 2 * wide);
  std::vector<float> in = random_vec(static_cast<size_t>(net.g.tensor(net.x).shape.numel()), 99);
  std::vector<float> ref = run_graph(net.g, net.weights, net.x, net.y, in);

  Graph g = net.g;
  ReorderResult r = reorder_for_memory(g, true);
  // Best order a1, a2, b1, b2, y: the peak is x + a2 + b1 (or x + a1 + a2): one wide tensor.
  CHECK(r.lower_bound_before == before);
  CHECK(r.lower_bound_after == 2 * narrow + wide);
  CHECK(liveness_lower_bound(g) == r.lower_bound_after);
  CHECK(r.nodes_moved > 0);
  std::vector<std::string> names;
  for (const Node& n : g.nodes()) names.push_back(n.name);
  CHECK(names == std::vector<std::string>{"a1", "a2", "b1", "b2", "y"});
  // The reordered node list is a valid order of the original graph.
  std::vector<int> order;
  for (const Node& n : g.nodes())
    for (size_t i = 0; i < net.g.nodes().size(); ++i)
      if (net.g.nodes()[i].name == n.name) order.push_back(static_cast<int>(i));
  std::string why;
  CHECK_MESSAGE(is_valid_order(net.g, order, &why), why);
  std::vector<float> out = run_graph(g, net.weights, net.x, net.y, in);
  REQUIRE(out.size() == ref.size());
  CHECK(std::memcmp(out.data(), ref.data(), out.size() * sizeof(float)) == 0);
}

TEST_CASE("reorder: order validity respects data and storage dependencies") {
  TwoBranch net;
  std::string why;
  CHECK(is_valid_order(net.g, {0, 1, 2, 3, 4}));
  CHECK(is_valid_order(net.g, {1, 0, 3, 2, 4}));
  CHECK_FALSE(is_valid_order(net.g, {2, 0, 1, 3, 4}, &why));  // a2 before a1
  CHECK(why.find("a2") != std::string::npos);
  CHECK_FALSE(is_valid_order(net.g, {0, 1, 2, 3}, &why));
  CHECK_FALSE(is_valid_order(net.g, {0, 0, 2, 3, 4}, &why));
  // Writers into views of one buffer come before its readers.
  Graph g;
  int x = g.input("x", DType::f32, Shape{1, 4, 4, 2});
  int w = g.weight("w", DType::f32, Shape{1, 1, 2, 2});
  int cat = g.buffer("cat", DType::f32, Shape{1, 4, 4, 4});
  g.conv2d(x, w, -1, Conv2dParams{}, -1, g.slice_channels(cat, 0, 2), "left");
  g.conv2d(x, w, -1, Conv2dParams{}, -1, g.slice_channels(cat, 2, 2), "right");
  int y = g.softmax(cat, "y");
  g.mark_output(y);
  auto preds = node_predecessors(g);
  CHECK(preds[2] == std::vector<int>{0, 1});
  CHECK_FALSE(is_valid_order(g, {0, 2, 1}));
  // Conservatively, writers of one storage keep their order too (views may overlap).
  CHECK_FALSE(is_valid_order(g, {1, 0, 2}));
}

TEST_CASE("reorder: never raises the lower bound of real graphs, and GPEN output is bit-identical") {
  cpu::set_num_threads(1);
  for (auto bb : {RetinaFaceBackbone::mobilenet025, RetinaFaceBackbone::resnet50}) {
    RetinaFaceGraph rg = build_retinaface_graph(bb, 64, 96);
    Graph g = rg.graph;
    ReorderResult r = reorder_for_memory(g, true);
    INFO(retinaface_backbone_name(bb), " ", r.lower_bound_before, " -> ", r.lower_bound_after, " ", r.rule);
    CHECK(r.lower_bound_after <= r.lower_bound_before);
    CHECK(liveness_lower_bound(g) == r.lower_bound_after);
    CHECK(g.nodes().size() == rg.graph.nodes().size());
  }
  GpenConfig c;
  c.size = 32;
  c.narrow = 1.0 / 32;  // 16 channels
  c.style_dim = 16;
  auto be = make_cpu_backend();
  auto plain = GpenModel::synthetic(c, *be, 5);
  auto reordered = GpenModel::synthetic(c, *be, 5);
  plain->prepare(2);
  PlanOptions o;
  o.reorder = true;
  reordered->prepare(2, o);
  const TransformReport& x = reordered->transform_report();
  CHECK(x.lower_bound_after <= x.lower_bound_before);
  CHECK(reordered->plan().lower_bound_bytes == x.lower_bound_after);
  std::vector<float> in = random_vec(2 * 32 * 32 * 3, 3), a(in.size()), b(in.size());
  for (auto& v : in) v = std::tanh(v);
  plain->run(in.data(), a.data());
  reordered->run(in.data(), b.data());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}
