#pragma once
// GFPGANv1Clean as a bare graph with random weights, run by an Executor on any backend: the
// banded and unbanded graphs of tests/test_banding_gfpgan.cpp and test_cuda_banding_gfpgan.cpp.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/models/f32_weights.h"
#include "engine/models/gfpgan.h"
#include "engine/plan/banding.h"
#include "engine/plan/memory_plan.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/executor.h"

namespace gpen_test {

using namespace gpen;

// GFPGANv1Clean at 64 x 64 with 16 to 32 decoder channels (8 to 16 in the U-Net).
inline GfpganNetConfig small_gfpgan(int batch) {
  GfpganNetConfig c;
  c.out_size = 64;
  c.num_style_feat = 16;
  c.channel_multiplier = 1;
  c.narrow = 1.0 / 16;
  c.batch = batch;
  return c;
}

// Random weights for every weight tensor of the graph (the demodulation's squared norms
// positive), on the backend's memory once upload() is called.
struct GraphWeights {
  std::vector<std::vector<float>> data;
  WeightMap map;
  void* device = nullptr;
  Backend* backend = nullptr;
  explicit GraphWeights(const Graph& g) {
    std::mt19937 rng(17);
    for (const TensorDesc& d : g.tensors()) {
      if (d.kind != TensorKind::Weight || map.count(d.name)) continue;
      const bool positive = d.name.find("demod_q") != std::string::npos;
      std::uniform_real_distribution<float> u(positive ? 0.05f : -0.4f, positive ? 0.5f : 0.4f);
      data.emplace_back(static_cast<size_t>(d.shape.numel()));
      for (float& v : data.back()) v = u(rng);
      map[d.name] = make_view(data.back().data(), DType::f32, d.shape);
    }
  }
  GraphWeights(const GraphWeights&) = delete;
  GraphWeights& operator=(const GraphWeights&) = delete;
  void upload(Backend& be) {
    backend = &be;
    device = upload_weight_views(be, map, data, "random GFPGAN weights");
  }
  ~GraphWeights() {
    if (device) backend->release(device);
  }
};

struct GfpganOutputs {
  std::vector<float> image, style;
};

inline GfpganOutputs run_gfpgan_graph(Backend& be, const GfpganGraph& gg, const GraphWeights& w,
                                      const std::vector<float>& in) {
  const MemoryPlan plan = plan_memory(gg.graph, planned_on(be));
  Executor ex(gg.graph, plan, be, w.map);
  ex.set_input(gg.input, in.data(), in.size() * sizeof(float));
  ex.run();
  GfpganOutputs r;
  r.image.resize(static_cast<size_t>(gg.graph.tensor(gg.output).shape.numel()));
  r.style.resize(static_cast<size_t>(gg.graph.tensor(gg.style_code).shape.numel()));
  ex.get_output(gg.output, r.image.data(), r.image.size() * sizeof(float));
  ex.get_output(gg.style_code, r.style.data(), r.style.size() * sizeof(float));
  return r;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Bands c's graph by spec, checks the transform applied and lowered the liveness bound without
// removing FLOPs, and that the banded graph gives ref, the unbanded graph's outputs, bit for bit.
inline void check_banded_equals_whole(Backend& be, const GfpganNetConfig& c, const BandingSpec& spec,
                                      const GraphWeights& w, const std::vector<float>& in,
                                      const GfpganOutputs& ref) {
  GfpganGraph banded = build_gfpgan_graph(c);
  const BandingResult r = apply_banding(banded.graph, spec);
  REQUIRE(r.applied);
  CHECK(r.lower_bound_after < r.lower_bound_before);
  CHECK(r.flops_after >= r.flops_before * (1 - 1e-12));
  const GfpganOutputs out = run_gfpgan_graph(be, banded, w, in);
  CHECK(same_bits(out.image, ref.image));
  CHECK(same_bits(out.style, ref.style));
}

inline std::vector<float> random_faces(const GfpganNetConfig& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> in(size_t(c.batch) * c.out_size * c.out_size * 3);
  for (auto& v : in) v = u(rng);
  return in;
}

}  // namespace gpen_test
