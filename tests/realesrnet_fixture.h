#pragma once
// A tiny RealESRNet .gpw written at test time (x2, 8 features, growth 8, 1 block; random weights,
// conv_last's bias 0.5 so the output is not black): the real graph and tiling at a cost a test
// can pay. Its "super-resolution" is noise; tests check sizes, reports and plumbing with it.
#include <random>
#include <string>
#include <vector>

#include "engine/models/rrdbnet.h"
#include "weights/gpw_writer.h"

namespace gpen_test {

inline void write_tiny_realesrnet(const std::string& path) {
  using namespace gpen;
  RrdbConfig c;
  c.scale = 2;
  c.num_feat = 8;
  c.num_grow_ch = 8;
  c.num_block = 1;
  const RrdbGraph rg = build_rrdbnet_graph(c, 2, 2);
  GpwWriter w("realesrnet", {{"scale", 2}, {"num_in_ch", 3}, {"num_out_ch", 3}, {"num_feat", 8}, {"num_block", 1},
                             {"num_grow_ch", 8}});
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.f, 0.1f);
  for (const TensorDesc& t : rg.graph.tensors()) {
    if (t.kind != TensorKind::Weight) continue;
    std::vector<float> v(static_cast<size_t>(t.shape.numel()));
    for (float& x : v) x = nd(rng);
    if (t.name == "conv_last.bias") v.assign(v.size(), 0.5f);
    w.add_f32(t.name, DType::f32, t.shape, v.data());
  }
  w.write(path);
}

}  // namespace gpen_test
