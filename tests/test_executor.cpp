// The executor runs a planned graph in one arena; after construction, run() must not allocate.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "engine/runtime/device_weights.h"
#include "engine/runtime/executor.h"
#include "engine/plan/memory_plan.h"
#include "kernels/cpu/ops.h"

using namespace gpen;

static std::atomic<long> g_news{0};
void* operator new(size_t n) {
  ++g_news;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// Every replaceable form that pairs with the free() below must be replaced too, or a sanitizer
// sees the library's nothrow new (used by std::stable_sort) released by our delete.
void* operator new[](size_t n) { return ::operator new(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  ++g_news;
  return std::malloc(n ? n : 1);
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  return ::operator new(n, std::nothrow);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

struct Net {
  Graph g;
  int x, y;
  std::vector<float> w1, b1, w2;
  WeightMap weights;
};

// x -> conv3x3 (+bias, leaky) -> bias_act (in place) -> conv1x1 into a channel slice of a
// concat buffer whose other half is a second conv; output = add(concat-based conv, ...).
void build(Net& n) {
  Graph& g = n.g;
  n.x = g.input("x", DType::f32, Shape{2, 8, 8, 4});
  int w1 = g.weight("w1", DType::f32, Shape{3, 3, 4, 6});
  int b1 = g.weight("b1", DType::f32, Shape{6});
  int w2 = g.weight("w2", DType::f32, Shape{1, 1, 6, 3});
  Conv2dParams p3;
  p3.kh = p3.kw = 3;
  p3.pad_top = p3.pad_left = p3.pad_bottom = p3.pad_right = 1;
  p3.act = Activation::leaky(0.1f);
  int a = g.conv2d(n.x, w1, b1, p3);
  int a2 = g.bias_act(a, b1, BiasActParams{false, Activation::scaled_leaky()});
  int cat = g.buffer("cat", DType::f32, Shape{2, 8, 8, 6});
  Conv2dParams p1;
  g.conv2d(a2, w2, -1, p1, -1, g.slice_channels(cat, 0, 3));
  g.conv2d(a2, w2, -1, p1, -1, g.slice_channels(cat, 3, 3));
  int w3 = g.weight("w3", DType::f32, Shape{1, 1, 6, 4});
  int c = g.conv2d(cat, w3, -1, p1);
  n.y = g.add(c, n.x, AddParams{Activation::relu()});
  g.mark_output(n.y);
  n.w1 = random_vec(3 * 3 * 4 * 6, 1);
  n.b1 = random_vec(6, 2);
  n.w2 = random_vec(6 * 3, 3);
  static std::vector<float> w3v = random_vec(6 * 4, 4);
  n.weights["w1"] = make_view(n.w1.data(), DType::f32, Shape{3, 3, 4, 6});
  n.weights["b1"] = make_view(n.b1.data(), DType::f32, Shape{6});
  n.weights["w2"] = make_view(n.w2.data(), DType::f32, Shape{1, 1, 6, 3});
  n.weights["w3"] = make_view(w3v.data(), DType::f32, Shape{1, 1, 6, 4});
}

}  // namespace

TEST_CASE("executor: repeated runs allocate nothing and give identical results") {
  cpu::set_num_threads(2);
  Net n;
  build(n);
  auto backend = make_cpu_backend();
  WorkspaceFn ws = [&](const Graph& g, const Node& nd) { return backend->workspace_bytes(g, nd); };
  MemoryPlan plan = plan_memory(n.g, ws);
  CHECK(plan.inplace_count >= 1);
  CHECK(plan.arena_bytes >= plan.lower_bound_bytes);
  CHECK(plan.arena_bytes <= plan.naive_bytes);
  Executor ex(n.g, plan, *backend, n.weights);
  CHECK(backend->allocations() <= 2);  // arena + workspace, nothing else
  std::vector<float> xin = random_vec(2 * 8 * 8 * 4, 5), out1(2 * 8 * 8 * 4), out2(out1.size());
  ex.set_input(n.x, xin.data(), xin.size() * 4);
  ex.run();
  ex.get_output(n.y, out1.data(), out1.size() * 4);
  size_t allocs = backend->allocations();
  long news = g_news.load();
  for (int i = 0; i < 5; ++i) ex.run();
  CHECK(g_news.load() == news);
  CHECK(backend->allocations() == allocs);
  ex.get_output(n.y, out2.data(), out2.size() * 4);
  CHECK(out1 == out2);

  // The same graph without reuse (naive plan, no in-place) must give the same numbers.
  MemoryPlan naive = plan_memory(n.g, ws, {"naive", false});
  CHECK(naive.inplace_count == 0);
  Executor ex2(n.g, naive, *backend, n.weights);
  ex2.set_input(n.x, xin.data(), xin.size() * 4);
  ex2.run();
  std::vector<float> out3(out1.size());
  ex2.get_output(n.y, out3.data(), out3.size() * 4);
  CHECK(out1 == out3);
}

TEST_CASE("executor: a profiled run times every node and computes the same result") {
  Net n;
  build(n);
  auto backend = make_cpu_backend();
  MemoryPlan plan = plan_memory(n.g, [&](const Graph& g, const Node& nd) { return backend->workspace_bytes(g, nd); });
  Executor ex(n.g, plan, *backend, n.weights);
  std::vector<float> xin = random_vec(2 * 8 * 8 * 4, 5), want(2 * 8 * 8 * 4), got(want.size());
  ex.set_input(n.x, xin.data(), xin.size() * 4);
  ex.run();
  ex.get_output(n.y, want.data(), want.size() * 4);
  const std::vector<double> ms = ex.run_profiled();
  REQUIRE(ms.size() == n.g.nodes().size());
  for (double t : ms) CHECK(t >= 0.0);
  ex.get_output(n.y, got.data(), got.size() * 4);
  CHECK(got == want);
}

TEST_CASE("memory plan: views share their root, in-place reuses a dying input") {
  Net n;
  build(n);
  MemoryPlan plan = plan_memory(n.g, [](const Graph&, const Node&) { return size_t(0); });
  const auto& nodes = n.g.nodes();
  // bias_act (node 1) runs in place on the conv output it consumes.
  CHECK(plan.tensor_offset[nodes[1].outputs[0]] == plan.tensor_offset[nodes[1].inputs[0]]);
  // The two slices of the concat buffer sit 3 floats apart within it.
  int s0 = nodes[2].outputs[0], s1 = nodes[3].outputs[0];
  CHECK(plan.tensor_offset[s1] - plan.tensor_offset[s0] == 3 * 4);
  // Graph inputs are never overwritten in place.
  CHECK(plan.tensor_offset[n.y] != plan.tensor_offset[n.x]);
}

TEST_CASE("pack_host_weights: one backend allocation, 256-byte slots, views repointed, a source released after its last reader") {
  auto backend = make_cpu_backend();
  std::vector<float> a(3, 1.5f), b(75, 2.5f), c((size_t{3} << 18) + 2, 3.5f);
  TensorView va = make_view(a.data(), DType::f32, Shape{3});
  TensorView vb = make_view(b.data(), DType::f32, Shape{75});
  TensorView vb2 = make_view(b.data(), DType::f32, Shape{75});  // a second reader of b
  TensorView vc = make_view(c.data(), DType::f32, Shape{static_cast<int64_t>(c.size())});
  std::vector<TensorView*> views = {&va, &vb, &vc, &vb2};
  std::vector<std::pair<const void*, size_t>> released;
  const PackedWeights p =
      pack_host_weights(*backend, views, [&](const void* d, size_t n) { released.emplace_back(d, n); });
  CHECK(backend->allocations() == 1);
  REQUIRE(released.size() == 3);  // a, c, then b once its second reader is in
  CHECK(released[0] == std::make_pair(static_cast<const void*>(a.data()), size_t{12}));
  CHECK(released[1] == std::make_pair(static_cast<const void*>(c.data()), c.size() * 4));
  CHECK(released[2] == std::make_pair(static_cast<const void*>(b.data()), size_t{300}));
  CHECK(p.offset == std::vector<size_t>{0, 256, 768, 768 + c.size() * 4 + 248});
  const auto* base = static_cast<const uint8_t*>(p.base);
  for (size_t i = 0; i < views.size(); ++i) {
    CHECK(views[i]->data == base + p.offset[i]);
    CHECK(reinterpret_cast<uintptr_t>(views[i]->data) % 256 == 0);
  }
  CHECK(vb2.f32()[74] == 2.5f);
  CHECK(vc.f32()[c.size() - 1] == 3.5f);
  CHECK(va.f32()[2] == 1.5f);
  backend->release(p.base);
}

TEST_CASE("upload_views: one upload, 256-byte slots, each view repointed with its bytes") {
  auto backend = make_cpu_backend();  // its upload is a copy: the device loaders' path, checkable
  std::vector<float> a(3, 1.5f), b(75, 2.5f);
  TensorView va = make_view(a.data(), DType::f32, Shape{3});
  TensorView vb = make_view(b.data(), DType::f32, Shape{5, 15});
  std::vector<TensorView*> views = {&va, &vb};
  const PackedWeights p = upload_views(*backend, views);
  CHECK(backend->allocations() == 1);
  CHECK(p.offset == std::vector<size_t>{0, 256});
  CHECK(p.bytes == 256 + 512);
  CHECK(va.data == p.base);
  CHECK(vb.data == static_cast<const uint8_t*>(p.base) + 256);
  CHECK(vb.shape == Shape{5, 15});
  CHECK(va.f32()[2] == 1.5f);
  CHECK(vb.f32()[74] == 2.5f);
  backend->release(p.base);
}
