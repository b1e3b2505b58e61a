// The transformer ops through the graph, the planner and the executor on the CPU backend:
// CodeFormer's Fuse_sft_block (codeformer_fuse_block: the concatenation, VQGAN's ResBlock on
// GroupNorm + swish, the scale and shift convs and fuse_sft) against the official module, the
// attention with its workspace declared to the planner, and the code lookup's two outputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/models/codeformer_blocks.h"
#include "engine/plan/memory_plan.h"
#include "engine/runtime/executor.h"
#include "kernels/cpu/ops.h"
#include "tests/transformer_fixture.h"

using namespace gpen;
using transformer_fixture::Fix;
using transformer_fixture::load;
using transformer_fixture::worst_rel;

namespace {

// Plans g on the CPU backend, binds the fixtures named by its weights (prefix + weight name),
// feeds the inputs and returns each of `outs` after one run.
std::vector<std::vector<float>> run(const Graph& g, const std::vector<std::pair<int, Fix>>& inputs,
                                    const std::string& prefix, const std::vector<int>& outs) {
  auto backend = make_cpu_backend();
  MemoryPlan plan = plan_memory(g, planned_on(*backend));
  std::vector<Fix> held;
  held.reserve(g.tensors().size());
  WeightMap weights;
  for (const TensorDesc& t : g.tensors()) {
    if (t.kind != TensorKind::Weight) continue;
    held.push_back(load(prefix + t.name));
    REQUIRE(held.back().shape == t.shape);
    weights[t.name] = make_view(held.back().v.data(), DType::f32, t.shape);
  }
  Executor ex(g, plan, *backend, weights);
  for (const auto& [t, f] : inputs) ex.set_input(t, f.v.data(), f.v.size() * sizeof(float));
  ex.run();
  std::vector<std::vector<float>> r;
  for (int t : outs) {
    std::vector<float> o(g.tensor(t).bytes() / sizeof(float));
    ex.get_output(t, o.data(), g.tensor(t).bytes());
    r.push_back(std::move(o));
  }
  return r;
}

}  // namespace

TEST_CASE("codeformer_fuse_block is the official Fuse_sft_block") {
  Fix enc = load("block_enc"), dec = load("block_dec");
  Graph g;
  const int e = g.input("enc", DType::f32, enc.shape);
  const int d = g.input("dec", DType::f32, dec.shape);
  const int y = codeformer_fuse_block(g, e, d, 0.5f, "block");
  g.mark_output(y);
  const auto out = run(g, {{e, enc}, {d, dec}}, "", {y});
  CHECK(worst_rel(out[0], load("block_y").v) < 1e-5);
}

TEST_CASE("attention (self and cross) and code_lookup run from a plan: workspace from the planner, two outputs") {
  Fix x = load("attn_x"), pos = load("attn_pos");
  Graph g;
  const int xi = g.input("x", DType::f32, x.shape);
  const int pi = g.input("pos", DType::f32, pos.shape);
  Graph::AttentionInputs in{xi, pi, g.weight("in_w", DType::f32, Shape{48, 16}), g.weight("in_b", DType::f32, Shape{48}),
                            g.weight("out_w", DType::f32, Shape{16, 16}), g.weight("out_b", DType::f32, Shape{16})};
  const int y = g.attention(in, 4);
  g.mark_output(y);
  auto backend = make_cpu_backend();
  CHECK(backend->workspace_bytes(g, g.nodes().back()) > 4 * 10 * 10 * sizeof(float));  // holds the scores
  const auto out = run(g, {{xi, x}, {pi, pos}}, "attn_", {y});
  CHECK(worst_rel(out[0], load("attn_y").v) < 2e-6);

  // Cross-attention: the queries a third input, its workspace larger by their copy.
  Fix xx = load("xattn_x"), xq = load("xattn_query"), xp = load("xattn_pos");
  Graph c;
  const int cx = c.input("x", DType::f32, xx.shape), cq = c.input("query", DType::f32, xq.shape);
  const int cp = c.input("pos", DType::f32, xp.shape);
  Graph::AttentionInputs cin{cx, cp, c.weight("in_w", DType::f32, Shape{48, 16}), c.weight("in_b", DType::f32, Shape{48}),
                             c.weight("out_w", DType::f32, Shape{16, 16}), c.weight("out_b", DType::f32, Shape{16}), cq};
  const int cy = c.attention(cin, 4);
  c.mark_output(cy);
  CHECK(backend->workspace_bytes(c, c.nodes().back()) > backend->workspace_bytes(g, g.nodes().back()));
  const auto cres = run(c, {{cx, xx}, {cq, xq}, {cp, xp}}, "xattn_", {cy});
  CHECK(worst_rel(cres[0], load("xattn_y").v) < 2e-6);
  Graph bad;
  Graph::AttentionInputs bin{bad.input("x", DType::f32, Shape{2, 10, 16}), -1, bad.weight("in_w", DType::f32, Shape{48, 16}),
                             bad.weight("in_b", DType::f32, Shape{48}), bad.weight("out_w", DType::f32, Shape{16, 16}),
                             bad.weight("out_b", DType::f32, Shape{16}), bad.input("q", DType::f32, Shape{2, 9, 16})};
  CHECK_THROWS_AS(bad.attention(bin, 4), Error);

  Fix z = load("vq_z");
  Graph h;
  const int zi = h.input("z", DType::f32, z.shape);
  const auto o = h.code_lookup(zi, h.weight("codebook", DType::f32, Shape{20, 6}), CodeLookup::argmin);
  h.mark_output(o.features);
  h.mark_output(o.indices);
  const auto r = run(h, {{zi, z}}, "vq_", {o.features});
  CHECK(r[0] == load("vq_argmin_y").v);
}
