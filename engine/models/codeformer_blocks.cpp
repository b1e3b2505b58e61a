// VQGAN's conv, norm, ResBlock and attention block and CodeFormer's Fuse_sft_block as graph
// builders (codeformer_blocks.h).
#include "engine/models/codeformer_blocks.h"

namespace gpen {

namespace {

int64_t channels(const Graph& g, int x) { return g.tensor(x).shape[3]; }

int conv(Graph& g, int x, const std::string& name, int64_t cout, int k, bool lrelu, int residual = -1) {
  Conv2dParams p;
  p.kh = p.kw = k;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = k / 2;
  p.has_bias = true;
  p.has_residual = residual >= 0;
  p.act = lrelu ? Activation::leaky(0.2f) : Activation::none();
  const int w = g.weight(name + ".weight", g.activation_dtype(), Shape{k, k, channels(g, x), cout});
  const int b = g.weight(name + ".bias", g.activation_dtype(), Shape{cout});
  return g.conv2d(x, w, b, p, residual, -1, name);
}

// VQGAN's normalize() followed by swish, in one op.
int norm_swish(Graph& g, int x, const std::string& name) {
  const int64_t c = channels(g, x);
  const int gamma = g.weight(name + ".weight", g.activation_dtype(), Shape{c});
  const int beta = g.weight(name + ".bias", g.activation_dtype(), Shape{c});
  return g.group_norm(x, gamma, beta, GroupNormParams{32, 1e-6f, true, true}, name);
}

}  // namespace

int vqgan_conv3x3(Graph& g, int x, const std::string& name, int64_t cout, int stride) {
  Conv2dParams p;
  p.kh = p.kw = 3;
  p.stride_h = p.stride_w = stride;
  p.pad_top = p.pad_left = stride == 1 ? 1 : 0;
  p.pad_bottom = p.pad_right = 1;
  p.has_bias = true;
  const int w = g.weight(name + ".weight", g.activation_dtype(), Shape{3, 3, channels(g, x), cout});
  const int b = g.weight(name + ".bias", g.activation_dtype(), Shape{cout});
  return g.conv2d(x, w, b, p, -1, -1, name);
}

int vqgan_norm(Graph& g, int x, const std::string& name, bool silu) {
  if (silu) return norm_swish(g, x, name);
  const int64_t c = channels(g, x);
  return g.group_norm(x, g.weight(name + ".weight", g.activation_dtype(), Shape{c}), g.weight(name + ".bias", g.activation_dtype(), Shape{c}),
                      GroupNormParams{32, 1e-6f, true, false}, name);
}

int vqgan_attn_block(Graph& g, int x, int heads, const std::string& p, const std::string& norm, int query,
                     const std::string& query_norm) {
  const Shape xs = g.tensor(x).shape;
  const int64_t C = xs[3];
  const Shape tokens{xs[0], xs[1] * xs[2], C};
  const int h = g.reshape(vqgan_norm(g, x, norm, false), tokens, p + ".tokens");
  Graph::AttentionInputs in{h, -1, g.weight(p + ".in_proj_weight", g.activation_dtype(), Shape{3 * C, C}),
                            g.weight(p + ".in_proj_bias", g.activation_dtype(), Shape{3 * C}),
                            g.weight(p + ".proj_out.weight", g.activation_dtype(), Shape{C, C}),
                            g.weight(p + ".proj_out.bias", g.activation_dtype(), Shape{C}), -1};
  if (query >= 0) {
    GPEN_CHECK(g.tensor(query).shape == xs,
               p + ": query feature " + g.tensor(query).shape.str() + " and feature " + xs.str() + " differ");
    in.query = g.reshape(vqgan_norm(g, query, query_norm, false), tokens, p + ".query_tokens");
  }
  const int a = g.attention(in, heads, p + ".attn");
  return g.add(g.reshape(a, xs, p + ".attn_map"), x, AddParams{}, -1, p + ".out");
}

int codeformer_resblock(Graph& g, int x, int64_t cout, const std::string& prefix, const char* shortcut) {
  const int skip = channels(g, x) == cout ? x : conv(g, x, prefix + "." + shortcut, cout, 1, false);
  int h = norm_swish(g, x, prefix + ".norm1");
  h = conv(g, h, prefix + ".conv1", cout, 3, false);
  h = norm_swish(g, h, prefix + ".norm2");
  return conv(g, h, prefix + ".conv2", cout, 3, false, skip);
}

int codeformer_fuse_block(Graph& g, int enc, int dec, float w, const std::string& prefix) {
  const Shape& ds = g.tensor(dec).shape;
  GPEN_CHECK(g.tensor(enc).shape == ds, prefix + ": encoder feature " + g.tensor(enc).shape.str() +
                                            " and decoder feature " + ds.str() + " differ");
  const int64_t C = ds[3];
  // The concatenation [enc, dec] on the channel axis: each copied into its half of one buffer
  // (an identity bias_act), the engine's form of torch.cat.
  const int cat = g.buffer(prefix + ".cat", g.activation_dtype(), Shape{ds[0], ds[1], ds[2], 2 * C});
  const BiasActParams copy{false, Activation::none()};
  g.bias_act(enc, -1, copy, g.slice_channels(cat, 0, C), prefix + ".cat_enc");
  g.bias_act(dec, -1, copy, g.slice_channels(cat, C, C), prefix + ".cat_dec");
  const int feat = codeformer_resblock(g, cat, C, prefix + ".encode_enc");
  const int scale = conv(g, conv(g, feat, prefix + ".scale.0", C, 3, true), prefix + ".scale.2", C, 3, false);
  const int shift = conv(g, conv(g, feat, prefix + ".shift.0", C, 3, true), prefix + ".shift.2", C, 3, false);
  return g.fuse_sft(dec, scale, shift, w, prefix + ".out");
}

}  // namespace gpen
