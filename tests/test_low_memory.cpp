// The CPU's low-memory mode (`--memory-budget`, docs/memory.md "Low-memory CPU mode"), its
// kernels and plan: the modconv reading its 8-bit weight tile by tile computes the packed path's
// bits with a workspace that no longer holds the layer; the conv rule of the mode; the residency
// bound and budgets that cannot fit. Whole models: tests/test_low_memory_gpen.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "engine/core/error.h"
#include "engine/models/gpen_model.h"
#include "engine/plan/memory_budget.h"
#include "kernels/cpu/conv_select.h"
#include "kernels/cpu/ops.h"
#include "weights/quant8.h"

using namespace gpen;

namespace {

std::vector<float> randn(size_t n, uint32_t seed, float sd) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

}  // namespace

TEST_CASE("low memory: the modconv reading 8-bit weights tile by tile equals the packed weight bit for bit") {
  for (DType dt : {DType::i8, DType::f8e4m3}) {
    for (int64_t group : {int64_t{0}, int64_t{32}}) {
      CAPTURE(dtype_name(dt));
      CAPTURE(group);
      struct MC {
        int n, h, w, c, cout;
        bool up;
      } mcs[] = {{2, 9, 11, 40, 24, false}, {1, 20, 23, 64, 48, false}, {2, 5, 6, 24, 20, true},
                 {1, 12, 13, 48, 40, true}, {1, 4, 4, 32, 40, false}, {1, 16, 16, 256, 256, false}};
      for (const MC& c : mcs) {
        CAPTURE(c.h);
        CAPTURE(c.up);
        const Shape xs{c.n, c.h, c.w, c.c};
        const Shape ys{c.n, c.up ? 2 * c.h + 1 : c.h, c.up ? 2 * c.w + 1 : c.w, c.cout};
        const std::vector<float> x = randn(static_cast<size_t>(xs.numel()), 1, 1.0f);
        const std::vector<float> s = randn(static_cast<size_t>(c.n * c.c), 2, 1.0f);
        const std::vector<float> dd(static_cast<size_t>(c.n * c.cout), 1.3f), b = randn(static_cast<size_t>(c.cout), 4, 0.1f);
        const Shape wsh{3, 3, c.c, c.cout};
        const std::vector<float> wf = randn(static_cast<size_t>(wsh.numel()), 5, 0.2f);
        Quantized8Grouped q = quantize8_grouped(wf.data(), wsh, dt, group);
        TensorView w8 = make_view(q.codes.data(), dt, wsh);
        w8.qscale = q.scale.data();
        w8.qgroup = q.group;
        const TensorView xv = make_view(const_cast<float*>(x.data()), DType::f32, xs);
        const TensorView sv = make_view(const_cast<float*>(s.data()), DType::f32, Shape{c.n, c.c});
        const TensorView dv = make_view(const_cast<float*>(dd.data()), DType::f32, Shape{c.n, c.cout});
        const TensorView bv = make_view(const_cast<float*>(b.data()), DType::f32, Shape{c.cout});
        ModConvParams p;
        p.k = 3, p.up = c.up;
        p.has_demod = p.has_bias = !c.up;
        std::vector<float> y[2];
        size_t ws_bytes[2] = {0, 0};
        for (int tiles = 0; tiles < 2; ++tiles) {
          const cpu::ConvChoice ch{cpu::ConvPath::modconv_direct, 0, tiles == 1};
          ws_bytes[tiles] = cpu::modconv_workspace_bytes(ch, p, xs, ys, 0);
          std::vector<unsigned char> ws(ws_bytes[tiles]);
          y[tiles].assign(static_cast<size_t>(ys.numel()), 0.0f);
          cpu::ModConvArgs a;
          a.x = &xv, a.s = &sv, a.w = &w8;
          if (!c.up) a.d = &dv, a.bias = &bv;
          cpu::modconv(ch, p, a, make_view(y[tiles].data(), DType::f32, ys), ws.data());
        }
        CHECK(std::memcmp(y[0].data(), y[1].data(), y[0].size() * 4) == 0);
        // The packed path holds the whole weight as f32 (9 C Cout floats) beside its per-thread
        // scratch; the tiles keep none of it (their tasks' larger band and accumulator tile cost
        // less than that wherever the weight outweighs the scratch, as on GPEN's 512-channel layers).
        if (c.c * c.cout >= 256 * 256) CHECK(ws_bytes[1] + size_t{9} * c.c * c.cout * 4 / 2 <= ws_bytes[0]);
      }
    }
  }
}

TEST_CASE("low memory: the mode's conv rule has no Winograd and the modconv reads its weight per tile") {
  cpu::CpuOptions o;
  o.low_memory = true;
  ModConvParams p;
  p.k = 3;
  const cpu::ConvChoice c = cpu::choose_conv(cpu::modconv_case(p, Shape{1, 64, 64, 512}, Shape{1, 64, 64, 512}), o);
  CHECK(c.path == cpu::ConvPath::modconv_direct);
  CHECK(c.weight_tiles);
  CHECK(cpu::conv_choice_label(c) == "modconv_direct (weight tiles)");
  Conv2dParams q;
  q.kh = q.kw = 3;
  q.pad_top = q.pad_left = q.pad_bottom = q.pad_right = 1;
  const cpu::ConvChoice cc = cpu::choose_conv(cpu::conv2d_case(q, Shape{1, 64, 64, 64}, Shape{1, 64, 64, 64}), o);
  CHECK(cc.path != cpu::ConvPath::winograd);
  CHECK_FALSE(cc.weight_tiles);
  o.low_memory = false;
  CHECK(cpu::choose_conv(cpu::modconv_case(p, Shape{1, 64, 64, 512}, Shape{1, 64, 64, 512}), o).path ==
        cpu::ConvPath::winograd);
  CHECK(cpu::choose_conv(cpu::conv2d_case(q, Shape{1, 64, 64, 64}, Shape{1, 64, 64, 64}), o).path ==
        cpu::ConvPath::winograd);
}

TEST_CASE("low memory: the residency bound, and budgets that cannot fit") {
  GpenConfig c;
  c.size = 64;
  c.channel_multiplier = 2;
  c.narrow = 1;
  c.quant8 = DType::i8;
  c.q8_group = 32;
  const GpenGraph gg = build_gpen_graph(c);
  const WeightResidency r = weight_residency(gg.graph);
  CHECK(r.total_bytes == gg.graph.weights_bytes());
  CHECK(r.peak_bytes > 0);
  CHECK(r.peak_bytes < r.total_bytes / 2);
  // The peak holds at least the largest weight with its scales.
  size_t largest = 0;
  for (const TensorDesc& t : gg.graph.tensors())
    if (t.kind == TensorKind::Weight) largest = std::max(largest, t.bytes());
  CHECK(r.peak_bytes >= largest);

  cpu::CpuOptions o;
  o.low_memory = true;
  auto b = make_cpu_backend(o);
  const WorkspaceFn ws = [&b](const Graph& g, const Node& n) { return b->workspace_bytes(g, n); };
  const BudgetFit tiny = fit_memory_budget([&c] { return build_gpen_graph(c).graph; }, ws, size_t{1} << 20, {});
  CHECK_FALSE(tiny.fits);
  // A model on a backend without the mode refuses a memory budget, naming it.
  auto plain = make_cpu_backend(cpu::CpuOptions{});
  auto m = GpenModel::synthetic(c, *plain);
  PlanOptions po;
  po.memory_budget = size_t{1} << 30;
  CHECK_THROWS_WITH_AS(m->prepare(1, po), doctest::Contains("low-memory mode"), Error);
}
