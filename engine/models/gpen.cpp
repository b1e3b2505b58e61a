#include "engine/models/gpen.h"

#include <cmath>
#include <sstream>
#include <utility>

#include "weights/quant8.h"

namespace gpen {

namespace {

// The 4x4 FIR [1,3,3,1] x [1,3,3,1] / 64 of StyleGAN2, times `gain` (4 for upsampling blurs).
UpFirDn2dParams fir(float gain, int up, int pad0, int pad1) {
  static const float k1[4] = {1, 3, 3, 1};
  UpFirDn2dParams p;
  p.kh = p.kw = 4;
  p.up_x = p.up_y = up;
  p.pad_x0 = p.pad_y0 = pad0;
  p.pad_x1 = p.pad_y1 = pad1;
  p.kernel.resize(16);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) p.kernel[y * 4 + x] = k1[y] * k1[x] / 64.0f * gain;
  return p;
}

int log2i(int v) {
  int l = 0;
  while ((1 << l) < v) ++l;
  return l;
}

struct Builder {
  const GpenConfig& c;
  Graph& g;
  int w_latent = -1;

  // Small tensors (biases, Q tables, noise weights) take the activation dtype: the CUDA kernels
  // want one dtype per call, and in f32 graphs they are f32 whatever the big weights are.
  int weight(const std::string& name, const Shape& s, bool big = true) {
    return g.weight(name, big ? c.weight_dtype : c.act_dtype, s);
  }
  // A big conv weight: 8-bit codes and their scales when the model is quantised (c.quant8).
  int conv_weight(const std::string& name, const Shape& s) {
    if (!dtype_is_8bit_weight(c.quant8)) return weight(name, s);
    return weight8(name, c.quant8, s);
  }
  // A dense weight [out][in]: 8-bit (scales per output row or row group) when c.dense8 is set.
  int dense_weight(const std::string& name, const Shape& s, int layer) {
    if (!dtype_is_8bit_weight(c.quant8) || !dtype_is_8bit_weight(c.dense8) || !(c.dense8_layers & layer))
      return weight(name, s);
    return weight8(name, c.dense8, s);
  }
  int weight8(const std::string& name, DType dt, const Shape& s) {
    const int w = g.weight(name, dt, s);
    g.weight(name + ".qscale", DType::f32, q8_scale_shape(s, q8_group_for(q8_axes(s).k, c.q8_group)));
    return w;
  }
  int style(const std::string& prefix, int cin) {
    int wm = dense_weight(prefix + ".conv.modulation.weight", Shape{cin, c.style_dim}, kDense8Modulation);
    int bm = weight(prefix + ".conv.modulation.bias", Shape{cin}, false);
    return g.dense(w_latent, wm, bm, DenseParams{}, prefix + ".style");
  }

  // The layer that produced the current decoder activation owns the noise weight and the second
  // half of the activation bias that the next consumer applies to the encoder feature.
  int prev_act_bias = -1;
  int prev_noise_w = -1;
};

}  // namespace

int parse_dense8_layers(const std::string& list) {
  int m = 0;
  size_t a = 0;
  while (a <= list.size()) {
    size_t b = list.find(',', a);
    if (b == std::string::npos) b = list.size();
    const std::string item = list.substr(a, b - a);
    if (item == "modulation") m |= kDense8Modulation;
    else if (item == "final_linear") m |= kDense8FinalLinear;
    else if (item == "style") m |= kDense8StyleMlp;
    else if (item == "all") m |= kDense8All;
    else throw Error("dense layers: '" + item + "' is not one of modulation, final_linear, style, all");
    a = b + 1;
  }
  return m;
}

std::string GpenConfig::describe() const {
  std::ostringstream os;
  os << "GPEN size " << size;
  if (output_size() != size) os << " -> " << output_size() << " (FullGenerator_SR)";
  os << ", channel multiplier " << channel_multiplier << ", narrow " << narrow << ", batch "
     << batch << ", " << dtype_name(act_dtype);
  if (dtype_is_8bit_weight(quant8)) {
    os << ", " << dtype_name(quant8) << " conv weights";
    if (dtype_is_8bit_weight(dense8)) {
      os << ", " << dtype_name(dense8) << " dense weights (";
      const char* sep = "";
      for (auto [bit, name] : {std::pair{kDense8Modulation, "modulation"}, std::pair{kDense8FinalLinear, "final_linear"},
                               std::pair{kDense8StyleMlp, "style"}})
        if (dense8_layers & bit) os << sep << name, sep = ", ";
      os << ")";
    }
    if (q8_group > 0) os << ", scales per group of " << q8_group;
  }
  return os.str();
}

int gpen_channels(const GpenConfig& c, int r) {
  const double n = c.narrow, cm = c.channel_multiplier;
  double v;
  if (r <= 32) v = 512 * n;
  else if (r == 64) v = 256 * cm * n;
  else if (r == 128) v = 128 * cm * n;
  else if (r == 256) v = 64 * cm * n;
  else if (r == 512) v = 32 * cm * n;
  else if (r == 1024) v = 16 * cm * n;
  else v = 8 * cm * n;
  return static_cast<int>(v + 1e-9);  // int() of the product, robust to 0.1-style binary fractions
}

void validate_gpen_config(const GpenConfig& c) {
  GPEN_CHECK(c.size >= 16 && c.size <= 2048 && (c.size & (c.size - 1)) == 0,
             "GPEN size must be a power of two from 16 to 2048, got " + std::to_string(c.size));
  GPEN_CHECK(c.channel_multiplier >= 1 && c.channel_multiplier <= 8,
             "GPEN channel multiplier must be 1..8, got " + std::to_string(c.channel_multiplier));
  GPEN_CHECK(c.narrow > 0 && c.narrow <= 4, "GPEN narrow must be in (0, 4], got " + std::to_string(c.narrow));
  GPEN_CHECK(c.style_dim >= 1 && c.style_dim <= 4096, "GPEN style_dim must be 1..4096");
  GPEN_CHECK(c.batch >= 1 && c.batch <= 4096, "batch must be 1..4096, got " + std::to_string(c.batch));
  GPEN_CHECK(c.out_size == 0 || (c.out_size >= c.size && c.out_size <= 2048 && (c.out_size & (c.out_size - 1)) == 0),
             "GPEN out_size must be 0 or a power of two from size " + std::to_string(c.size) + " to 2048, got " +
                 std::to_string(c.out_size));
  for (int r = 4; r <= c.output_size(); r *= 2)
    GPEN_CHECK(gpen_channels(c, r) >= 1, "GPEN narrow " + std::to_string(c.narrow) + " leaves no channels at " +
                                             std::to_string(r) + "x" + std::to_string(r));
}

GpenGraph build_gpen_graph(const GpenConfig& c) {
  validate_gpen_config(c);
  GpenGraph out;
  Graph& g = out.graph;
  g.set_activation_dtype(c.act_dtype);
  Builder b{c, g};
  const int S = c.size, L = log2i(S), N = c.batch;

  // ---- encoder: e_j at resolution S / 2^j
  out.input = g.input("input", c.act_dtype, Shape{N, S, S, 3});
  std::vector<int> e(L - 1);
  std::vector<int> ech(L - 1);
  {
    int ch = gpen_channels(c, S);
    Conv2dParams p;
    p.act = Activation::scaled_leaky();
    e[0] = g.conv2d(out.input, b.weight("ecd0.0.0.weight", Shape{1, 1, 3, ch}),
                    b.weight("ecd0.0.1.bias", Shape{ch}, false), p, -1, -1, "ecd0");
    ech[0] = ch;
  }
  for (int j = 1; j <= L - 2; ++j) {
    int r = S >> j;
    int cin = ech[j - 1], cout = gpen_channels(c, r);
    int blurred = g.upfirdn2d(e[j - 1], fir(1.0f, 1, 2, 2), -1, "ecd" + std::to_string(j) + ".blur");
    Conv2dParams p;
    p.kh = p.kw = 3;
    p.stride_h = p.stride_w = 2;
    p.act = Activation::scaled_leaky();
    std::string pre = "ecd" + std::to_string(j) + ".0.";
    e[j] = g.conv2d(blurred, b.conv_weight(pre + "1.weight", Shape{3, 3, cin, cout}), b.weight(pre + "2.bias", Shape{cout}, false),
                    p, -1, -1, "ecd" + std::to_string(j));
    ech[j] = cout;
  }
  // ---- final linear and mapping network: the latent w shared by every layer
  const int c4 = ech[L - 2];
  int flat = g.reshape(e[L - 2], Shape{N, 16 * c4}, "ecd_flat");
  DenseParams fl;
  fl.act = Activation::scaled_leaky();
  const int sd = c.style_dim;
  int z = g.dense(flat, b.dense_weight("final_linear.0.weight", Shape{sd, 16 * c4}, kDense8FinalLinear),
                  b.weight("final_linear.0.bias", Shape{sd}, false), fl, "final_linear");
  int w = g.pixel_norm(z, "style.pixel_norm");
  for (int i = 1; i <= 8; ++i) {
    std::string pre = "generator.style." + std::to_string(i);
    w = g.dense(w, b.dense_weight(pre + ".weight", Shape{sd, sd}, kDense8StyleMlp), b.weight(pre + ".bias", Shape{sd}, false),
                fl, pre);
  }
  b.w_latent = w;

  // ---- decoder. The input of each layer is the virtual concat (x, e_r) where e_r enters through
  // the previous layer's noise weight and second bias half: see ModConvParams.
  auto feature_at = [&](int r) { return e[L - log2i(r)]; };
  auto to_rgb = [&](const std::string& pre, int x, int xn, int cx, int skip) {
    int cin = 2 * cx;
    int wr = b.weight(pre + ".conv.weight", Shape{1, 1, cin, 3});
    int s = b.style(pre, cin);
    Graph::ModConvInputs in;
    in.x = x;
    in.x2 = xn;
    in.x2_scale = b.prev_noise_w;
    in.x2_bias = g.slice_channels(b.prev_act_bias, cx, cx, pre + ".input_noise_bias");
    in.w = wr;
    in.s = s;
    in.bias = b.weight(pre + ".bias", Shape{3}, false);
    ModConvParams p;
    p.k = 1;
    p.x2_act = Activation::scaled_leaky();
    if (skip >= 0) in.residual = g.upfirdn2d(skip, fir(4.0f, 2, 2, 1), -1, pre + ".upsample");
    return g.modconv(in, p, -1, pre);
  };
  auto styled = [&](const std::string& pre, int x, int xn, int cin_total, int cout, bool up) {
    int wt = b.conv_weight(pre + ".conv.weight", Shape{3, 3, cin_total, cout});
    int q = b.weight(pre + ".conv.demod_q", Shape{cout, cin_total}, false);
    int s = b.style(pre, cin_total);
    int d = g.demod(s, q, pre + ".demod");
    int act_bias = b.weight(pre + ".activate.bias", Shape{2 * cout}, false);
    int b_conv = g.slice_channels(act_bias, 0, cout, pre + ".activate.bias[conv]");
    Graph::ModConvInputs in;
    in.x = x;
    if (xn >= 0) {
      in.x2 = xn;
      in.x2_scale = b.prev_noise_w;
      in.x2_bias = g.slice_channels(b.prev_act_bias, cin_total / 2, cin_total / 2, pre + ".input_noise_bias");
    }
    in.w = wt;
    in.s = s;
    ModConvParams p;
    p.k = 3;
    p.x2_act = Activation::scaled_leaky();
    int y;
    if (up) {
      p.up = true;
      int t = g.modconv(in, p, -1, pre + ".convT");
      UpFirDn2dParams bl = fir(4.0f, 1, 1, 1);
      bl.act = Activation::scaled_leaky();
      y = g.upfirdn2d(t, bl, -1, pre + ".blur", d, b_conv);
    } else {
      in.d = d;
      in.bias = b_conv;
      p.act = Activation::scaled_leaky();
      y = g.modconv(in, p, -1, pre);
    }
    b.prev_act_bias = act_bias;
    b.prev_noise_w = b.weight(pre + ".noise.weight", Shape{1}, false);
    return y;
  };

  const int ch4 = gpen_channels(c, 4);
  int x = styled("generator.conv1", b.weight("generator.input.input", Shape{1, 4, 4, ch4}), -1, ch4, ch4, false);
  int xn = feature_at(4);
  int cx = ch4;
  int rgb = to_rgb("generator.to_rgb1", x, xn, cx, -1);
  // Above S (FullGenerator_SR) each StyledConv concatenates its own noise, an input of the graph.
  auto noise_at = [&](int r, int ch, int k) {
    int t = g.input("noise." + std::to_string(r) + "." + std::to_string(k), c.act_dtype, Shape{N, r, r, ch});
    out.noise.push_back(t);
    return t;
  };
  for (int r = 8, i = 0; r <= c.output_size(); r *= 2, ++i) {
    int cout = gpen_channels(c, r);
    x = styled("generator.convs." + std::to_string(2 * i), x, xn, 2 * cx, cout, true);
    xn = r <= S ? feature_at(r) : noise_at(r, cout, 0);
    cx = cout;
    x = styled("generator.convs." + std::to_string(2 * i + 1), x, xn, 2 * cx, cout, false);
    if (r > S) xn = noise_at(r, cout, 1);
    rgb = to_rgb("generator.to_rgbs." + std::to_string(i), x, xn, cx, rgb);
  }
  out.output = rgb;
  g.mark_output(rgb);
  return out;
}

}  // namespace gpen
