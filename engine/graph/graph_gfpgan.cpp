// The graph ops of GFPGAN (kernels/params.h): bilinear resize, the clean StyleConv's noise
// epilogue and the SFT affine, with their shape checks.
#include "engine/graph/graph.h"

namespace gpen {

int Graph::resize_bilinear(int x, int out_h, int out_w, const std::string& name) {
  const Shape& xs = tensor(x).shape;
  std::string nm = auto_name(name, "resize_bilinear");
  GPEN_CHECK(xs.rank == 4 && out_h > 0 && out_w > 0, nm + ": bad resize of " + xs.str());
  int y = new_intermediate(nm, act_dtype_, Shape{xs[0], out_h, out_w, xs[3]});
  add_node({nm, ResizeBilinearParams{out_h, out_w}, {x}, {y}});
  return y;
}

int Graph::noise_bias_act(int x, int noise, int noise_weight, int bias, const NoiseBiasActParams& p,
                          const std::string& name) {
  const Shape& xs = tensor(x).shape;
  std::string nm = auto_name(name, "noise_bias_act");
  GPEN_CHECK(xs.rank == 4, nm + ": input must be NHWC, got " + xs.str());
  GPEN_CHECK(tensor(noise).shape == (Shape{xs[1], xs[2]}),
             nm + ": noise " + tensor(noise).shape.str() + " is not the map of " + xs.str());
  GPEN_CHECK(tensor(noise_weight).shape.numel() == 1, nm + ": noise weight must hold one value");
  if (bias >= 0) GPEN_CHECK(tensor(bias).shape.numel() == xs[3], nm + ": bias must have C values");
  NoiseBiasActParams q = p;
  q.has_bias = bias >= 0;
  int y = new_intermediate(nm, act_dtype_, xs);
  Node n{nm, q, {x, noise, noise_weight, bias}, {y}};
  n.inplace_input = 0;
  add_node(std::move(n));
  return y;
}

int Graph::sft(int x, int scale, int shift, int64_t c0, const std::string& name) {
  const Shape& xs = tensor(x).shape;
  std::string nm = auto_name(name, "sft");
  GPEN_CHECK(xs.rank == 4 && c0 >= 0 && c0 < xs[3], nm + ": bad SFT of " + xs.str() + " from channel " + std::to_string(c0));
  const Shape cs{xs[0], xs[1], xs[2], xs[3] - c0};
  GPEN_CHECK(tensor(scale).shape == cs && tensor(shift).shape == cs,
             nm + ": scale " + tensor(scale).shape.str() + " and shift " + tensor(shift).shape.str() + " must be " + cs.str());
  int y = new_intermediate(nm, act_dtype_, xs);
  Node n{nm, SftParams{c0}, {x, scale, shift}, {y}};
  n.inplace_input = 0;
  add_node(std::move(n));
  return y;
}

}  // namespace gpen
