// ParseNet's graph on the CUDA backend (emulated) against the CPU backend: the same structure as
// the official network (reflection-padded convs, stride-2 downs, up2 + pad gathers, residual
// sums) with channels divided by 16 so the emulator runs it in seconds, at 32x32 and 48x32, fp32;
// then the class map and mask of the logits through the CUDA parse_labels.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/models/parsenet.h"
#include "engine/plan/memory_plan.h"
#include "engine/runtime/cuda/backend_cuda.h"
#include "engine/runtime/device.h"
#include "engine/runtime/device_weights.h"
#include "engine/runtime/executor.h"
#include "kernels/cpu/parse_labels.h"
#include "kernels/cuda/parse_labels.h"
#include "tests/cuda_emu/test_util.h"

using namespace gpen;

namespace {

struct RandomWeights {
  std::vector<std::vector<float>> data;
  WeightMap host;
};

// He-scaled weights, small biases: activations stay O(1) through the 27 residual convs.
RandomWeights random_weights(const Graph& g, uint32_t seed) {
  RandomWeights r;
  std::mt19937 rng(seed);
  for (const auto& t : g.tensors()) {
    if (t.kind != TensorKind::Weight) continue;
    std::vector<float> v(static_cast<size_t>(t.shape.numel()));
    const bool bias = t.shape.rank == 1;
    const double fan_in = bias ? 1.0 : static_cast<double>(t.shape[0] * t.shape[1] * t.shape[2]);
    std::normal_distribution<float> nd(0.0f, bias ? 0.1f : static_cast<float>(std::sqrt(1.0 / fan_in)));
    for (float& x : v) x = nd(rng);
    r.data.push_back(std::move(v));
    r.host[t.name] = make_view(r.data.back().data(), DType::f32, t.shape);
  }
  return r;
}

}  // namespace

TEST_CASE("ParseNet graph on the CUDA backend matches the CPU backend (emulated, narrow channels)") {
  for (auto [h, w] : {std::pair<int, int>{32, 32}, {48, 32}}) {
    CAPTURE(h);
    CAPTURE(w);
    const ParseNetGraph pg = build_parsenet_graph(h, w, 1, false, 16);
    const RandomWeights rw = random_weights(pg.graph, 5);
    std::vector<float> in(static_cast<size_t>(h) * w * 3);
    std::mt19937 rng(9);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (float& x : in) x = u(rng);
    const size_t out_n = static_cast<size_t>(h) * w * kParseClasses;

    auto cpu = make_cpu_backend();
    const MemoryPlan cplan = plan_memory(pg.graph, [&](const Graph& g, const Node& n) { return cpu->workspace_bytes(g, n); });
    Executor cex(pg.graph, cplan, *cpu, rw.host);
    cex.set_input(pg.input, in.data(), in.size() * 4);
    cex.run();
    std::vector<float> want(out_n);
    cex.get_output(pg.logits, want.data(), out_n * 4);

    DeviceOptions o;
    o.kind = DeviceKind::cuda;
    auto be = cuda::make_cuda_backend(o);
    // Weights in one device allocation, as ParseNetModel uploads them.
    WeightMap dev = rw.host;
    std::vector<TensorView*> views;
    std::vector<size_t> sizes;
    for (auto& [name, v] : dev) {
      views.push_back(&v);
      sizes.push_back(static_cast<size_t>(v.numel()) * 4);
    }
    const PackedWeights packed =
        upload_packed(*be, sizes, [&](size_t i, uint8_t* dst) { std::memcpy(dst, views[i]->data, sizes[i]); });
    for (size_t i = 0; i < views.size(); ++i) views[i]->data = static_cast<uint8_t*>(packed.base) + packed.offset[i];
    {
      const MemoryPlan dplan = plan_memory(pg.graph, [&](const Graph& g, const Node& n) { return be->workspace_bytes(g, n); });
      Executor dex(pg.graph, dplan, *be, dev);
      dex.set_input(pg.input, in.data(), in.size() * 4);
      dex.run();
      std::vector<float> got(out_n);
      dex.get_output(pg.logits, got.data(), out_n * 4);
      double err = 0, scale = 0;
      for (size_t i = 0; i < out_n; ++i) {
        REQUIRE(std::isfinite(got[i]));
        err = std::max(err, static_cast<double>(std::fabs(got[i] - want[i])));
        scale = std::max(scale, static_cast<double>(std::fabs(want[i])));
      }
      MESSAGE("fp32 relative error " << err / scale);
      CHECK(err / scale < 1e-5);

      // Class map and mask on the device from the arena's logits, against the CPU op on the CPU's.
      const size_t pixels = static_cast<size_t>(h) * w;
      std::vector<uint8_t> lab(pixels), mask(pixels);
      cpu::parse_labels(make_view(want.data(), DType::f32, Shape{1, h, w, kParseClasses}), lab.data(), mask.data());
      cuda_test::DeviceBuffer dl(pixels), dm(pixels);
      cuda::parse_labels(dex.view(pg.logits), dl.as<uint8_t>(), dm.as<uint8_t>(), kParseDropClasses, nullptr);
      const auto gl = dl.download<uint8_t>(pixels);
      size_t same = 0;
      for (size_t i = 0; i < pixels; ++i) same += gl[i] == lab[i];
      CHECK(static_cast<double>(same) / pixels >= 0.999);
      CHECK(dm.download<uint8_t>(pixels).size() == pixels);
    }
    be->release(packed.base);
  }
}
