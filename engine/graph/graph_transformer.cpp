// The graph ops of CodeFormer and RestoreFormer++ (kernels/params.h): GroupNorm, LayerNorm, GELU /
// SiLU, self- and cross-attention, the codebook lookup, the fuse block's output and CodeFormer's adaptive
// instance normalisation, with their shape checks.
// The attention's projected q, k, v and its [heads, L, L] score matrix are its workspace, which
// the backend declares to the planner (cpu::attention_workspace_bytes).
#include "engine/graph/graph.h"

namespace gpen {

namespace {

void check_affine(const Graph& g, int gamma, int beta, int64_t C, const std::string& nm) {
  GPEN_CHECK((gamma >= 0) == (beta >= 0), nm + ": gamma and beta come together");
  if (gamma < 0) return;
  GPEN_CHECK(g.tensor(gamma).shape == Shape{C} && g.tensor(beta).shape == Shape{C},
             nm + ": gamma " + g.tensor(gamma).shape.str() + " and beta " + g.tensor(beta).shape.str() + " must be [" +
                 std::to_string(C) + "]");
}

}  // namespace

int Graph::group_norm(int x, int gamma, int beta, const GroupNormParams& p, const std::string& name) {
  const Shape& xs = tensor(x).shape;
  std::string nm = auto_name(name, "group_norm");
  GPEN_CHECK(xs.rank == 4 && p.groups > 0 && xs[3] % p.groups == 0,
             nm + ": " + xs.str() + " does not split into " + std::to_string(p.groups) + " channel groups");
  check_affine(*this, gamma, beta, xs[3], nm);
  GroupNormParams q = p;
  q.affine = gamma >= 0;
  int y = new_intermediate(nm, act_dtype_, xs);
  add_node({nm, q, {x, gamma, beta}, {y}});
  return y;
}

int Graph::layer_norm(int x, int gamma, int beta, const LayerNormParams& p, const std::string& name) {
  const Shape& xs = tensor(x).shape;
  std::string nm = auto_name(name, "layer_norm");
  GPEN_CHECK(xs.rank >= 1, nm + ": input needs an axis");
  check_affine(*this, gamma, beta, xs[xs.rank - 1], nm);
  LayerNormParams q = p;
  q.affine = gamma >= 0;
  int y = new_intermediate(nm, act_dtype_, xs);
  Node n{nm, q, {x, gamma, beta}, {y}};
  n.inplace_input = 0;
  add_node(std::move(n));
  return y;
}

int Graph::smooth_act(int x, SmoothAct fn, const std::string& name) {
  std::string nm = auto_name(name, fn == SmoothAct::gelu ? "gelu" : "silu");
  int y = new_intermediate(nm, act_dtype_, tensor(x).shape);
  Node n{nm, SmoothActParams{fn}, {x}, {y}};
  n.inplace_input = 0;
  add_node(std::move(n));
  return y;
}

int Graph::attention(const AttentionInputs& in, int heads, const std::string& name) {
  const Shape& xs = tensor(in.x).shape;
  std::string nm = auto_name(name, "attention");
  GPEN_CHECK(xs.rank == 3 && heads > 0 && xs[2] % heads == 0,
             nm + ": input " + xs.str() + " must be [N, L, E] with E divisible by " + std::to_string(heads) + " heads");
  const int64_t E = xs[2];
  if (in.pos >= 0) {
    const Shape& ps = tensor(in.pos).shape;
    GPEN_CHECK(ps.rank == 3 && (ps[0] == 1 || ps[0] == xs[0]) && ps[1] == xs[1] && ps[2] == E,
               nm + ": position embedding " + ps.str() + " does not fit " + xs.str());
  }
  GPEN_CHECK(tensor(in.in_w).shape == (Shape{3 * E, E}) && tensor(in.in_b).shape == Shape{3 * E} &&
                 tensor(in.out_w).shape == (Shape{E, E}) && tensor(in.out_b).shape == Shape{E},
             nm + ": projections must be [3E, E], [3E], [E, E], [E] for E = " + std::to_string(E));
  if (in.query >= 0)
    GPEN_CHECK(tensor(in.query).shape == xs,
               nm + ": queries " + tensor(in.query).shape.str() + " must be shaped as the keys " + xs.str());
  int y = new_intermediate(nm, act_dtype_, xs);
  add_node({nm, AttentionParams{heads, in.pos >= 0, in.query >= 0},
            {in.x, in.pos, in.in_w, in.in_b, in.out_w, in.out_b, in.query},
            {y}});
  return y;
}

Graph::CodeLookupOutputs Graph::code_lookup(int z, int codebook, CodeLookup mode, const std::string& name) {
  const Shape zs = tensor(z).shape;
  const Shape cb = tensor(codebook).shape;
  std::string nm = auto_name(name, mode == CodeLookup::argmax ? "code_argmax" : "code_argmin");
  GPEN_CHECK(zs.rank == 4 && cb.rank == 2 && zs[3] == (mode == CodeLookup::argmax ? cb[0] : cb[1]),
             nm + ": input " + zs.str() + " does not fit the codebook " + cb.str());
  CodeLookupOutputs o;
  o.features = new_intermediate(nm, act_dtype_, Shape{zs[0], zs[1], zs[2], cb[1]});
  o.indices = new_intermediate(nm + ".indices", DType::i32, Shape{zs[0], zs[1], zs[2]});
  add_node({nm, CodeLookupParams{mode}, {z, codebook}, {o.features, o.indices}});
  return o;
}

int Graph::fuse_sft(int dec, int scale, int shift, float w, const std::string& name) {
  const Shape ds = tensor(dec).shape;
  std::string nm = auto_name(name, "fuse_sft");
  GPEN_CHECK(ds.rank == 4 && tensor(scale).shape == ds && tensor(shift).shape == ds,
             nm + ": scale " + tensor(scale).shape.str() + " and shift " + tensor(shift).shape.str() + " must be " +
                 ds.str());
  int y = new_intermediate(nm, act_dtype_, ds);
  Node n{nm, FuseSftParams{w}, {dec, scale, shift}, {y}};
  n.inplace_input = 0;
  add_node(std::move(n));
  return y;
}

int Graph::adain(int content, int style, const AdaInParams& p, const std::string& name) {
  const Shape xs = tensor(content).shape;
  const Shape ss = tensor(style).shape;
  std::string nm = auto_name(name, "adain");
  GPEN_CHECK(xs.rank == 4 && ss.rank == 4 && xs[0] == ss[0] && xs[3] == ss[3] && xs[1] * xs[2] >= 2 &&
                 ss[1] * ss[2] >= 2,
             nm + ": content " + xs.str() + " and style " + ss.str() +
                 " must be [N, H, W, C] with the same N and C and at least two positions each");
  int y = new_intermediate(nm, act_dtype_, xs);
  add_node({nm, p, {content, style}, {y}});
  return y;
}

}  // namespace gpen
