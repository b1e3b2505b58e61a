// GFPGANv1Clean (GFPGANv1.3, GFPGANv1.4, GFPGANCleanv1-NoCE-C2): its state-dict layout in the
// official order and its configuration from the shapes.
#include <algorithm>
#include <cmath>
#include <string>

#include "converter/layouts.h"
#include "engine/core/error.h"

namespace gpen::conv {

int GfpganConfig::log_size() const {
  GpenConfig g;
  g.size = out_size;
  return g.log_size();
}

// The decoder's table (StyleGAN2GeneratorClean): the same expressions as GPEN's, so that int()
// truncation agrees for fractional narrow values.
int GfpganConfig::channels(int res) const {
  GpenConfig g;
  g.channel_multiplier = channel_multiplier;
  g.narrow = narrow;
  return g.channels(res);
}

// The U-Net's table: the decoder's with narrow halved first (unet_narrow = narrow * 0.5), then
// the same products, so truncation happens where the official code truncates.
int GfpganConfig::unet_channels(int res) const {
  GpenConfig g;
  g.channel_multiplier = channel_multiplier;
  g.narrow = narrow * 0.5;
  return g.channels(res);
}

void GfpganConfig::check() const {
  if (out_size < 8 || out_size > 1024 || (out_size & (out_size - 1)) != 0)
    throw Error("GFPGAN: out_size " + std::to_string(out_size) + " is not a power of two in [8, 1024]");
  if (!(narrow > 0 && narrow <= 64)) throw Error("GFPGAN: narrow " + std::to_string(narrow) + " is out of range");
  if (!(channel_multiplier > 0 && channel_multiplier <= 64))
    throw Error("GFPGAN: channel_multiplier " + std::to_string(channel_multiplier) + " is out of range");
  if (num_style_feat < 1 || num_style_feat > 8192)
    throw Error("GFPGAN: num_style_feat " + std::to_string(num_style_feat) + " is out of range");
  if (num_mlp < 0 || num_mlp > 64) throw Error("GFPGAN: num_mlp " + std::to_string(num_mlp) + " is out of range");
  for (int r = 4; r <= out_size; r *= 2) {
    if (unet_channels(r) < 1)
      throw Error("GFPGAN: channel_multiplier " + std::to_string(channel_multiplier) + " and narrow " +
                  std::to_string(narrow) + " give no U-Net channels at resolution " + std::to_string(r));
    // SFT on half the channels splits the decoder's features at C/2, which must be the U-Net's
    // condition width; on all of them the conditions carry 2 * unet channels = the decoder's.
    if (r >= 8 && channels(r) / 2 != unet_channels(r) && sft_half)
      throw Error("GFPGAN: half of the decoder's " + std::to_string(channels(r)) + " channels at resolution " +
                  std::to_string(r) + " is not the U-Net's " + std::to_string(unet_channels(r)));
    if (r >= 8 && !sft_half && channels(r) != 2 * unet_channels(r))
      throw Error("GFPGAN: the decoder's " + std::to_string(channels(r)) + " channels at resolution " +
                  std::to_string(r) + " are not twice the U-Net's " + std::to_string(unet_channels(r)));
  }
}

static nlohmann::json number(double v) {
  if (v == std::floor(v)) return static_cast<int>(v);
  return v;
}

nlohmann::json GfpganConfig::to_json() const {
  return {{"out_size", out_size},
          {"num_style_feat", num_style_feat},
          {"channel_multiplier", number(channel_multiplier)},
          {"narrow", number(narrow)},
          {"num_mlp", num_mlp},
          {"different_w", different_w},
          {"sft_half", sft_half},
          {"input_is_latent", input_is_latent}};
}

GfpganConfig GfpganConfig::from_json(const nlohmann::json& j) {
  GfpganConfig c;
  if (!j.is_object()) throw Error("GFPGAN config: not an object");
  auto integer = [&](const char* k, int def, bool required) {
    if (!j.contains(k)) {
      if (required) throw Error(std::string("GFPGAN config: missing '") + k + "'");
      return def;
    }
    const auto& v = j[k];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (1 << 20))
      throw Error(std::string("GFPGAN config: '") + k + "' is not a valid integer");
    return static_cast<int>(v.get<int64_t>());
  };
  auto num = [&](const char* k) {
    if (!j.contains(k) || !j[k].is_number()) throw Error(std::string("GFPGAN config: missing or non-numeric '") + k + "'");
    return j[k].get<double>();
  };
  auto flag = [&](const char* k) {
    if (!j.contains(k) || !j[k].is_boolean()) throw Error(std::string("GFPGAN config: missing or non-boolean '") + k + "'");
    return j[k].get<bool>();
  };
  c.out_size = integer("out_size", 0, true);
  c.num_style_feat = integer("num_style_feat", 512, false);
  c.channel_multiplier = num("channel_multiplier");
  c.narrow = num("narrow");
  c.num_mlp = integer("num_mlp", 8, false);
  c.different_w = flag("different_w");
  c.sft_half = flag("sft_half");
  c.input_is_latent = flag("input_is_latent");
  c.check();
  return c;
}

std::string gfpgan_model_name(const GfpganConfig& c) {
  return "GFPGANv1Clean " + std::to_string(c.out_size);
}

std::vector<TensorSpec> gfpgan_layout(const GfpganConfig& c) {
  c.check();
  const int L = c.log_size();
  const int64_t D = c.num_style_feat;
  std::vector<TensorSpec> t;
  auto add = [&](std::string n, std::vector<int64_t> s) { t.push_back({std::move(n), std::move(s)}); };
  auto conv = [&](const std::string& p, int64_t out, int64_t in, int64_t k, bool bias = true) {
    add(p + ".weight", {out, in, k, k});
    if (bias) add(p + ".bias", {out});
  };
  auto resblock = [&](const std::string& p, int64_t in, int64_t out) {
    conv(p + ".conv1", in, in, 3);
    conv(p + ".conv2", out, in, 3);
    conv(p + ".skip", out, in, 1, false);
  };
  auto u = [&](int res) { return static_cast<int64_t>(c.unet_channels(res)); };
  conv("conv_body_first", u(c.out_size), 3, 1);
  for (int i = L; i > 2; --i) resblock("conv_body_down." + std::to_string(L - i), u(1 << i), u(1 << (i - 1)));
  conv("final_conv", u(4), u(4), 3);
  for (int i = 3; i <= L; ++i) resblock("conv_body_up." + std::to_string(i - 3), u(1 << (i - 1)), u(1 << i));
  for (int i = 3; i <= L; ++i) conv("toRGB." + std::to_string(i - 3), 3, u(1 << i), 1);
  add("final_linear.weight", {c.different_w ? c.num_latent() * D : D, u(4) * 16});
  add("final_linear.bias", {c.different_w ? c.num_latent() * D : D});
  const std::string g = "stylegan_decoder.";
  for (int k = 0; k < c.num_mlp; ++k) {
    // style_mlp is Sequential(NormStyleCode, Linear, LeakyReLU, Linear, ...): Linears at odd indices.
    add(g + "style_mlp." + std::to_string(2 * k + 1) + ".weight", {D, D});
    add(g + "style_mlp." + std::to_string(2 * k + 1) + ".bias", {D});
  }
  auto d = [&](int res) { return static_cast<int64_t>(c.channels(res)); };
  add(g + "constant_input.weight", {1, d(4), 4, 4});
  auto style_conv = [&](const std::string& p, int64_t in, int64_t out) {
    add(p + ".weight", {1});
    add(p + ".bias", {1, out, 1, 1});
    add(p + ".modulated_conv.weight", {1, out, in, 3, 3});
    add(p + ".modulated_conv.modulation.weight", {in, D});
    add(p + ".modulated_conv.modulation.bias", {in});
  };
  auto to_rgb = [&](const std::string& p, int64_t in) {
    add(p + ".bias", {1, 3, 1, 1});
    add(p + ".modulated_conv.weight", {1, 3, in, 1, 1});
    add(p + ".modulated_conv.modulation.weight", {in, D});
    add(p + ".modulated_conv.modulation.bias", {in});
  };
  style_conv(g + "style_conv1", d(4), d(4));
  to_rgb(g + "to_rgb1", d(4));
  int64_t in = d(4);
  for (int i = 3; i <= L; ++i) {
    style_conv(g + "style_convs." + std::to_string(2 * (i - 3)), in, d(1 << i));
    style_conv(g + "style_convs." + std::to_string(2 * (i - 3) + 1), d(1 << i), d(1 << i));
    in = d(1 << i);
  }
  for (int i = 3; i <= L; ++i) to_rgb(g + "to_rgbs." + std::to_string(i - 3), d(1 << i));
  for (int k = 0; k < c.num_layers(); ++k) {
    const int64_t r = c.noise_resolution(k);
    add(g + "noises.noise" + std::to_string(k), {1, 1, r, r});
  }
  for (const char* which : {"condition_scale.", "condition_shift."})
    for (int i = 3; i <= L; ++i) {
      const std::string p = which + std::to_string(i - 3);
      conv(p + ".0", u(1 << i), u(1 << i), 3);
      conv(p + ".2", c.sft_half ? u(1 << i) : 2 * u(1 << i), u(1 << i), 3);
    }
  return t;
}

bool looks_like_gfpgan(const ShapeMap& shapes) {
  return shapes.count("conv_body_first.weight") || shapes.count("stylegan_decoder.constant_input.weight");
}

GfpganConfig infer_gfpgan(const ShapeMap& m) {
  auto shape = [&](const std::string& k, size_t rank) -> const std::vector<int64_t>& {
    auto it = m.find(k);
    if (it == m.end()) throw Error("GFPGAN checkpoint lacks tensor '" + k + "'");
    if (it->second.size() != rank)
      throw Error("tensor '" + k + "' has shape " + shape_str(it->second) + ", expected rank " + std::to_string(rank));
    return it->second;
  };
  auto clamp = [](int64_t v) { return static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(v, 1 << 20))); };
  GfpganConfig c;
  // The encoder halves from out_size down to 4: one down block per halving.
  int down = 0;
  while (down < 16 && m.count("conv_body_down." + std::to_string(down) + ".conv1.weight")) ++down;
  if (down < 1 || down > 8)
    throw Error("GFPGAN checkpoint has " + std::to_string(down) +
                " down blocks (conv_body_down.*): not an out_size between 8 and 1024");
  c.out_size = 1 << (down + 2);
  const std::string g = "stylegan_decoder.";
  c.num_style_feat = clamp(shape(g + "to_rgb1.modulated_conv.modulation.weight", 2)[1]);
  int mlp = 0;
  while (mlp < 64 && m.count(g + "style_mlp." + std::to_string(2 * mlp + 1) + ".weight")) ++mlp;
  c.num_mlp = mlp;
  const int64_t c4 = shape(g + "constant_input.weight", 4)[1];
  if (c4 < 1 || c4 > (1 << 20)) throw Error("tensor '" + g + "constant_input.weight' has an invalid channel count");
  c.narrow = static_cast<double>(c4) / 512.0;  // exact: the official values are dyadic fractions
  c.channel_multiplier = 2;                    // the official default; no shape depends on it below 64
  if (c.out_size >= 64) {
    // style_convs.6 is the first decoder conv at 64x64, with int(256 * cm * narrow) outputs.
    const int64_t c64 = shape(g + "style_convs.6.modulated_conv.weight", 5)[1];
    bool found = false;
    for (int cm = 1; cm <= 16 && !found; ++cm)
      if (static_cast<int64_t>(256 * static_cast<double>(cm) * c.narrow) == c64) {
        c.channel_multiplier = cm;
        found = true;
      }
    if (!found) c.channel_multiplier = static_cast<double>(c64) * 2.0 / static_cast<double>(c4);
  }
  // One style code, or one per latent (different_w): final_linear's rows tell.
  const int64_t rows = shape("final_linear.weight", 2)[0];
  if (rows == c.num_style_feat) c.different_w = false;
  else if (rows == int64_t{c.num_latent()} * c.num_style_feat) c.different_w = true;
  else
    throw Error("tensor 'final_linear.weight' has " + std::to_string(rows) + " rows: neither num_style_feat " +
                std::to_string(c.num_style_feat) + " nor " + std::to_string(c.num_latent()) + " latents of it");
  // SFT on half the channels: the condition convs give the U-Net's width, else twice it.
  const int64_t sft = shape("condition_scale.0.2.weight", 4)[0];
  const int64_t u8 = shape("condition_scale.0.0.weight", 4)[0];
  if (sft == u8) c.sft_half = true;
  else if (sft == 2 * u8) c.sft_half = false;
  else
    throw Error("tensor 'condition_scale.0.2.weight' has " + std::to_string(sft) + " outputs: neither " +
                std::to_string(u8) + " (sft_half) nor " + std::to_string(2 * u8));
  // input_is_latent leaves no trace in the shapes; GFPGANer builds every clean model with it.
  c.input_is_latent = true;
  c.check();
  return c;
}

Recognition recognize_gfpgan(const ShapeMap& shapes) {
  Recognition r;
  r.arch = Arch::gfpgan;
  r.gfpgan = infer_gfpgan(shapes);
  r.config = r.gfpgan.to_json();
  r.layout = gfpgan_layout(r.gfpgan);
  return r;
}

}  // namespace gpen::conv
