// GFPGANv1Clean: the graph (U-Net encoder and its SFT conditions, final_linear's style codes, the
// StyleGAN2-clean decoder) and GfpganModel, its runner.
#include "engine/models/gfpgan.h"

#include <cmath>

#include "engine/models/gpen.h"
#include "weights/gpw.h"

namespace gpen {

int GfpganNetConfig::log_size() const {
  int l = 0;
  while ((1 << l) < out_size) ++l;
  return l;
}

// GFPGAN's decoder takes StyleGAN2's table, the same int() truncations as GPEN's.
int GfpganNetConfig::channels(int res) const {
  GpenConfig g;
  g.channel_multiplier = channel_multiplier;
  g.narrow = narrow;
  return gpen_channels(g, res);
}

// unet_narrow = narrow * 0.5, then the same products (the official channel dict).
int GfpganNetConfig::unet_channels(int res) const {
  GpenConfig g;
  g.channel_multiplier = channel_multiplier;
  g.narrow = narrow * 0.5;
  return gpen_channels(g, res);
}

void GfpganNetConfig::check() const {
  GPEN_CHECK(out_size >= 8 && out_size <= 1024 && (out_size & (out_size - 1)) == 0,
             "GFPGAN: out_size " + std::to_string(out_size) + " is not a power of two in [8, 1024]");
  GPEN_CHECK(num_style_feat >= 1 && num_style_feat <= 8192,
             "GFPGAN: num_style_feat " + std::to_string(num_style_feat) + " is out of range");
  GPEN_CHECK(channel_multiplier >= 1 && channel_multiplier <= 16,
             "GFPGAN: channel_multiplier " + std::to_string(channel_multiplier) + " is out of range");
  GPEN_CHECK(narrow > 0 && narrow <= 64, "GFPGAN: narrow " + std::to_string(narrow) + " is out of range");
  GPEN_CHECK(batch >= 1 && batch <= 4096, "GFPGAN: batch " + std::to_string(batch) + " is out of range");
  GPEN_CHECK(act == DType::f32 || act == DType::f16 || act == DType::bf16,
             std::string("GFPGAN: activation dtype ") + dtype_name(act) + " is not f32, f16 or bf16");
  for (int r = 4; r <= out_size; r *= 2) {
    GPEN_CHECK(unet_channels(r) >= 1, "GFPGAN: no U-Net channels at resolution " + std::to_string(r));
    // The SFT conditions must cover the channels they modulate: half the decoder's, or all.
    if (r >= 8)
      GPEN_CHECK(sft_half ? channels(r) % 2 == 0 && channels(r) / 2 == unet_channels(r)
                          : channels(r) == 2 * unet_channels(r),
                 "GFPGAN: the decoder's " + std::to_string(channels(r)) + " channels at resolution " +
                     std::to_string(r) + " do not match the U-Net's " + std::to_string(unet_channels(r)) +
                     (sft_half ? " (sft_half)" : ""));
  }
}

GfpganNetConfig gfpgan_config_from_gpw(const GpwFile& f) {
  GPEN_CHECK(f.arch() == "gfpgan", f.path() + " holds a '" + f.arch() + "' model, not GFPGAN");
  const auto& j = f.config();
  GfpganNetConfig c;
  try {
    c.out_size = j.at("out_size").get<int>();
    c.num_style_feat = j.at("num_style_feat").get<int>();
    const double cm = j.at("channel_multiplier").get<double>();
    GPEN_CHECK(cm == std::floor(cm) && cm >= 1 && cm <= 16,
               f.path() + ": GFPGAN channel_multiplier " + std::to_string(cm) + " is not a whole number in [1, 16]");
    c.channel_multiplier = static_cast<int>(cm);
    c.narrow = j.at("narrow").get<double>();
    c.different_w = j.at("different_w").get<bool>();
    c.sft_half = j.at("sft_half").get<bool>();
    GPEN_CHECK(j.at("input_is_latent").get<bool>(),
               f.path() + ": GFPGAN with input_is_latent false (style codes through the style MLP) is not supported");
  } catch (const nlohmann::json::exception& e) {
    throw Error(f.path() + ": GFPGAN configuration incomplete in the header (" + e.what() + ")");
  }
  try {
    c.check();
  } catch (const Error& e) {
    throw Error(f.path() + ": " + e.what());
  }
  return c;
}

namespace {

struct Builder {
  const GfpganNetConfig& c;
  Graph& g;
  int style = -1;  // final_linear's output

  int64_t channels(int x) const { return g.tensor(x).shape[3]; }
  int64_t size(int x) const { return g.tensor(x).shape[1]; }
  int weight(const std::string& name, const Shape& s) { return g.weight(name, g.activation_dtype(), s); }

  // nn.Conv2d (k x k, stride 1, padding k / 2), leaky relu 0.2 when asked; a residual is added
  // after it (ResBlock's out + skip).
  int conv(int x, const std::string& name, int64_t cout, int k, bool bias, bool lrelu, int residual = -1) {
    Conv2dParams p;
    p.kh = p.kw = k;
    p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = k / 2;
    p.has_bias = bias;
    p.has_residual = residual >= 0;
    p.act = lrelu ? Activation::leaky(0.2f) : Activation::none();
    const int w = weight(name + ".weight", Shape{k, k, channels(x), cout});
    const int b = bias ? weight(name + ".bias", Shape{cout}) : -1;
    return g.conv2d(x, w, b, p, residual, -1, name);
  }
  int resize(int x, int64_t r, const std::string& name) {
    return g.resize_bilinear(x, static_cast<int>(r), static_cast<int>(r), name);
  }

  // ResBlock: lrelu(conv2(resize(lrelu(conv1(x))))) + skip(resize(x)), resize by 1/2 or 2.
  int resblock(int x, const std::string& p, int64_t cout, bool up) {
    const int64_t r = up ? 2 * size(x) : size(x) / 2;
    int t = conv(x, p + ".conv1", channels(x), 3, true, true);
    t = resize(t, r, p + ".resize1");
    const int o = conv(t, p + ".conv2", cout, 3, true, true);
    return conv(resize(x, r, p + ".resize_skip"), p + ".skip", cout, 1, false, false, o);
  }

  // The style code of decoder layer k: its slice of final_linear's output, or the one code.
  int latent(int k) {
    const int64_t D = c.num_style_feat;
    if (!c.different_w) return style;
    return g.slice_channels(style, k * D, D, "latent." + std::to_string(k));
  }
  int modulation(const std::string& p, int64_t cin, int k) {
    const int w = weight(p + ".modulated_conv.modulation.weight", Shape{cin, c.num_style_feat});
    const int b = weight(p + ".modulated_conv.modulation.bias", Shape{cin});
    DenseParams d;
    d.has_bias = true;
    return g.dense(latent(k), w, b, d, p + ".style");
  }

  // StyleConv: the modulated, demodulated 3x3 conv (on the bilinear x2 of x when up), then
  // lrelu(y * sqrt 2 + noise weight * noise + bias).
  int style_conv(int x, const std::string& p, int64_t cout, bool up, int k, int noise) {
    const int64_t cin = channels(x);
    if (up) x = resize(x, 2 * size(x), p + ".upsample");
    Graph::ModConvInputs in;
    in.x = x;
    in.w = weight(p + ".modulated_conv.weight", Shape{3, 3, cin, cout});
    in.s = modulation(p, cin, k);
    in.d = g.demod(in.s, weight(p + ".modulated_conv.demod_q", Shape{cout, cin}), p + ".demod");
    ModConvParams mp;
    mp.k = 3;
    const int y = g.modconv(in, mp, -1, p);
    const int64_t r = size(y);
    NoiseBiasActParams e;
    e.gain = static_cast<float>(M_SQRT2);
    e.act = Activation::leaky(0.2f);
    return g.noise_bias_act(y, weight("stylegan_decoder.noises.noise" + std::to_string(noise), Shape{r, r}),
                            weight(p + ".weight", Shape{1}), weight(p + ".bias", Shape{cout}), e, p + ".epilogue");
  }

  // ToRGB: the modulated 1x1 conv without demodulation, + bias, + the bilinear x2 of the skip.
  int to_rgb(int x, const std::string& p, int k, int skip) {
    const int64_t cin = channels(x);
    Graph::ModConvInputs in;
    in.x = x;
    in.w = weight(p + ".modulated_conv.weight", Shape{1, 1, cin, 3});
    in.s = modulation(p, cin, k);
    in.bias = weight(p + ".bias", Shape{3});
    if (skip >= 0) in.residual = resize(skip, 2 * size(skip), p + ".upsample_skip");
    ModConvParams mp;
    mp.k = 1;
    return g.modconv(in, mp, -1, p);
  }
};

}  // namespace

GfpganGraph build_gfpgan_graph(const GfpganNetConfig& c) {
  c.check();
  GfpganGraph out;
  Graph& g = out.graph;
  g.set_activation_dtype(c.act);
  Builder b{c, g};
  const int S = c.out_size, L = c.log_size(), N = c.batch;
  auto u = [&](int r) { return static_cast<int64_t>(c.unet_channels(r)); };

  // ---- U-Net encoder: S down to 4, each level's output kept for the way up.
  out.input = g.input("input", c.act, Shape{N, S, S, 3});
  int feat = b.conv(out.input, "conv_body_first", u(S), 1, true, true);
  std::vector<int> skips(static_cast<size_t>(L - 2));
  for (int i = 0; i < L - 2; ++i) {
    feat = b.resblock(feat, "conv_body_down." + std::to_string(i), u(S >> (i + 1)), false);
    skips[static_cast<size_t>(L - 3 - i)] = feat;  // skips[0] is the 4x4 one
  }
  feat = b.conv(feat, "final_conv", u(4), 3, true, true);
  {
    const int64_t rows = c.different_w ? int64_t{c.num_latent()} * c.num_style_feat : c.num_style_feat;
    const int flat = g.reshape(feat, Shape{N, 16 * u(4)}, "final_conv_flat");
    DenseParams d;
    d.has_bias = true;
    out.style_code = g.dense(flat, b.weight("final_linear.weight", Shape{rows, 16 * u(4)}),
                             b.weight("final_linear.bias", Shape{rows}), d, "final_linear");
    b.style = out.style_code;
    g.mark_output(out.style_code);
  }
  // ---- U-Net decoder side: the SFT scale and shift at 8, 16, ..., S.
  std::vector<int> scale, shift;
  for (int i = 0; i < L - 2; ++i) {
    const std::string k = std::to_string(i);
    const int64_t ch = u(8 << i), sft_ch = c.sft_half ? ch : 2 * ch;
    feat = g.add(feat, skips[static_cast<size_t>(i)], AddParams{}, -1, "unet_skip." + k);
    feat = b.resblock(feat, "conv_body_up." + k, ch, true);
    // Sequential(Conv2d, LeakyReLU(0.2), Conv2d).
    auto condition = [&](const std::string& p) { return b.conv(b.conv(feat, p + ".0", ch, 3, true, true), p + ".2", sft_ch, 3, true, false); };
    scale.push_back(condition("condition_scale." + k));
    shift.push_back(condition("condition_shift." + k));
  }

  // ---- StyleGAN2-clean decoder with SFT.
  const std::string d = "stylegan_decoder.";
  const int c4 = c.channels(4);
  int x = b.style_conv(b.weight(d + "constant_input.weight", Shape{1, 4, 4, c4}), d + "style_conv1", c4, false, 0, 0);
  int rgb = b.to_rgb(x, d + "to_rgb1", 1, -1);
  for (int i = 0; i < L - 2; ++i) {
    const int64_t ch = c.channels(8 << i);
    const int k = 2 * i + 1;  // the latent (and noise) index of this level's first StyleConv
    x = b.style_conv(x, d + "style_convs." + std::to_string(2 * i), ch, true, k, k);
    x = g.sft(x, scale[static_cast<size_t>(i)], shift[static_cast<size_t>(i)], c.sft_half ? ch / 2 : 0,
              "sft." + std::to_string(i));
    x = b.style_conv(x, d + "style_convs." + std::to_string(2 * i + 1), ch, false, k + 1, k + 1);
    rgb = b.to_rgb(x, d + "to_rgbs." + std::to_string(i), k + 2, rgb);
  }
  out.output = rgb;
  g.mark_output(rgb);
  return out;
}

// ---- GfpganModel

GfpganModel::GfpganModel(const std::string& path, Backend& backend, std::optional<DType> precision)
    : net_(path, backend, network_precision(precision, backend, "GFPGAN")) {
  config_ = gfpgan_config_from_gpw(net_.file());
  config_.act = net_.precision();
  net_.bind_weights(build_gfpgan_graph(config_).graph, "GFPGAN");
}

GfpganModel::~GfpganModel() = default;

const MemoryPlan& GfpganModel::plan_for(int batch) {
  if (net_.holds({double(batch)})) return net_.plan();
  GfpganNetConfig c = config_;
  c.batch = batch;
  GfpganGraph gg = build_gfpgan_graph(c);
  return net_.install({double(batch)}, std::move(gg.graph),
                      {{"input", gg.input}, {"output", gg.output}, {"style_code", gg.style_code}});
}

void GfpganModel::run(const float* in, int batch, float* out, float* style_code) {
  plan_for(batch);
  net_.run({{"input", in}}, {{"output", out}, {"style_code", style_code}});
}

std::vector<double> GfpganModel::run_profiled(const float* in, int batch) {
  plan_for(batch);
  return net_.run_profiled({{"input", in}});
}

}  // namespace gpen
