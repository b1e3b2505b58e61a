#include "converter/layouts.h"

#include <cmath>
#include <set>
#include <utility>

#include "engine/core/error.h"

namespace gpen::conv {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// ---- GPEN ---------------------------------------------------------------------------------

int GpenConfig::log_size() const {
  int l = 0;
  while ((1 << l) < size && l < 30) ++l;
  return l;
}

int GpenConfig::channels(int res) const {
  // Same expressions, in the same evaluation order, as the official channel table, so that
  // int() truncation agrees for fractional narrow values.
  double v;
  if (res <= 32) v = 512 * narrow;
  else if (res == 64) v = 256 * channel_multiplier * narrow;
  else if (res == 128) v = 128 * channel_multiplier * narrow;
  else if (res == 256) v = 64 * channel_multiplier * narrow;
  else if (res == 512) v = 32 * channel_multiplier * narrow;
  else if (res == 1024) v = 16 * channel_multiplier * narrow;
  else if (res == 2048) v = 8 * channel_multiplier * narrow;
  else throw Error("GPEN: no channel count for resolution " + std::to_string(res));
  return static_cast<int>(v);
}

void GpenConfig::check() const {
  if (size < 16 || size > 2048 || (size & (size - 1)) != 0)
    throw Error("GPEN: size " + std::to_string(size) + " is not a power of two in [16, 2048]");
  if (!(narrow > 0 && narrow <= 64)) throw Error("GPEN: narrow " + std::to_string(narrow) + " is out of range");
  if (!(channel_multiplier > 0 && channel_multiplier <= 64))
    throw Error("GPEN: channel_multiplier " + std::to_string(channel_multiplier) + " is out of range");
  if (style_dim < 1 || style_dim > 8192) throw Error("GPEN: style_dim " + std::to_string(style_dim) + " is out of range");
  if (n_mlp < 1 || n_mlp > 64) throw Error("GPEN: n_mlp " + std::to_string(n_mlp) + " is out of range");
  if (out_size != 0 && (out_size <= size || out_size > 2048 || (out_size & (out_size - 1)) != 0))
    throw Error("GPEN: out_size " + std::to_string(out_size) + " is not a power of two in (size " +
                std::to_string(size) + ", 2048] (FullGenerator_SR)");
  for (int r = 4; r <= output_size(); r *= 2)
    if (channels(r) < 1)
      throw Error("GPEN: channel_multiplier " + std::to_string(channel_multiplier) + " and narrow " +
                  std::to_string(narrow) + " give no channels at resolution " + std::to_string(r));
}

nlohmann::json GpenConfig::to_json() const {
  nlohmann::json j;
  j["size"] = size;
  if (channel_multiplier == std::floor(channel_multiplier)) j["channel_multiplier"] = static_cast<int>(channel_multiplier);
  else j["channel_multiplier"] = channel_multiplier;
  if (narrow == std::floor(narrow)) j["narrow"] = static_cast<int>(narrow);
  else j["narrow"] = narrow;
  j["style_dim"] = style_dim;
  j["n_mlp"] = n_mlp;
  if (is_sr()) j["out_size"] = out_size;  // absent for a plain FullGenerator, as before
  return j;
}

GpenConfig GpenConfig::from_json(const nlohmann::json& j) {
  GpenConfig c;
  auto integer = [&](const char* k, int def, bool required) {
    if (!j.is_object() || !j.contains(k)) {
      if (required) throw Error(std::string("GPEN config: missing '") + k + "'");
      return def;
    }
    const auto& v = j[k];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (1 << 20))
      throw Error(std::string("GPEN config: '") + k + "' is not a valid integer");
    return static_cast<int>(v.get<int64_t>());
  };
  auto number = [&](const char* k) {
    if (!j.is_object() || !j.contains(k) || !j[k].is_number())
      throw Error(std::string("GPEN config: missing or non-numeric '") + k + "'");
    return j[k].get<double>();
  };
  c.size = integer("size", 0, true);
  c.channel_multiplier = number("channel_multiplier");
  c.narrow = number("narrow");
  c.style_dim = integer("style_dim", 512, false);
  c.n_mlp = integer("n_mlp", 8, false);
  c.out_size = integer("out_size", 0, false);
  if (c.out_size == c.size) c.out_size = 0;
  c.check();
  return c;
}

std::vector<TensorSpec> gpen_layout(const GpenConfig& c) {
  c.check();
  const int64_t D = c.style_dim;
  const int L = c.log_size();            // encoder: FullGenerator(size)
  const int LO = c.log_output_size();    // decoder: Generator(output_size)
  std::vector<TensorSpec> t;
  auto add = [&](std::string n, std::vector<int64_t> s, bool opt = false) { t.push_back({std::move(n), std::move(s), opt}); };
  for (int k = 1; k <= c.n_mlp; ++k) {
    add("generator.style." + std::to_string(k) + ".weight", {D, D});
    add("generator.style." + std::to_string(k) + ".bias", {D});
  }
  const int64_t c4 = c.channels(4);
  add("generator.input.input", {1, c4, 4, 4});
  auto styled = [&](const std::string& p, int64_t in, int64_t out, bool up) {
    add(p + ".conv.weight", {1, out, in, 3, 3});
    if (up) add(p + ".conv.blur.kernel", {4, 4}, true);
    add(p + ".conv.modulation.weight", {in, D});
    add(p + ".conv.modulation.bias", {in});
    add(p + ".noise.weight", {1});
    add(p + ".activate.bias", {2 * out});
  };
  auto to_rgb = [&](const std::string& p, int64_t in, bool up) {
    add(p + ".bias", {1, 3, 1, 1});
    if (up) add(p + ".upsample.kernel", {4, 4}, true);
    add(p + ".conv.weight", {1, 3, in, 1, 1});
    add(p + ".conv.modulation.weight", {in, D});
    add(p + ".conv.modulation.bias", {in});
  };
  styled("generator.conv1", c4, c4, false);
  // to_rgb1's tensors come in a slightly different order in the official state dict.
  add("generator.to_rgb1.bias", {1, 3, 1, 1});
  add("generator.to_rgb1.conv.weight", {1, 3, 2 * c4, 1, 1});
  add("generator.to_rgb1.conv.modulation.weight", {2 * c4, D});
  add("generator.to_rgb1.conv.modulation.bias", {2 * c4});
  int64_t in = 2 * c4;
  for (int i = 0; i + 3 <= LO; ++i) {
    int64_t out = c.channels(1 << (i + 3));
    styled("generator.convs." + std::to_string(2 * i), in, out, true);
    styled("generator.convs." + std::to_string(2 * i + 1), 2 * out, out, false);
    in = 2 * out;
  }
  for (int i = 0; i + 3 <= LO; ++i) to_rgb("generator.to_rgbs." + std::to_string(i), 2 * c.channels(1 << (i + 3)), true);
  add("ecd0.0.0.weight", {c.channels(c.size), 3, 1, 1});
  add("ecd0.0.1.bias", {c.channels(c.size)});
  for (int j = 1; j <= L - 2; ++j) {
    std::string p = "ecd" + std::to_string(j) + ".0.";
    int64_t o = c.channels(c.size >> j), i = c.channels(c.size >> (j - 1));
    add(p + "0.kernel", {4, 4}, true);
    add(p + "1.weight", {o, i, 3, 3});
    add(p + "2.bias", {o});
  }
  add("final_linear.0.weight", {D, 16 * c4});
  add("final_linear.0.bias", {D});
  return t;
}

// ---- RetinaFace ---------------------------------------------------------------------------

const char* backbone_name(RetinaBackbone b) { return b == RetinaBackbone::resnet50 ? "resnet50" : "mobilenet0.25"; }

RetinaBackbone parse_backbone(const std::string& s) {
  if (s == "mobilenet0.25" || s == "mobilenet") return RetinaBackbone::mobilenet025;
  if (s == "resnet50" || s == "Resnet50") return RetinaBackbone::resnet50;
  throw Error("unknown RetinaFace backbone '" + s + "' (expected mobilenet0.25 or resnet50)");
}

static void retina_in_out(RetinaBackbone b, int64_t* in_ch, int64_t* out_ch) {
  *in_ch = b == RetinaBackbone::resnet50 ? 256 : 32;
  *out_ch = b == RetinaBackbone::resnet50 ? 256 : 64;
}

nlohmann::json retinaface_config(RetinaBackbone b) {
  int64_t in, out;
  retina_in_out(b, &in, &out);
  return {{"backbone", backbone_name(b)}, {"in_channel", in}, {"out_channel", out}};
}

std::vector<ConvUnit> retinaface_units(RetinaBackbone b) {
  std::vector<ConvUnit> u;
  auto unit = [&](std::string conv, std::string bn, int64_t out, int64_t in, int64_t k, int64_t groups = 1) {
    u.push_back({std::move(conv), std::move(bn), out, in, k, groups, false});
  };
  if (b == RetinaBackbone::mobilenet025) {
    // conv_bn = Sequential(conv, bn, lrelu); conv_dw = Sequential(dw conv, bn, lrelu, 1x1 conv, bn, lrelu).
    auto dw = [&](const std::string& p, int64_t inp, int64_t oup) {
      unit(p + ".0", p + ".1", inp, inp, 3, inp);
      unit(p + ".3", p + ".4", oup, inp, 1);
    };
    unit("body.stage1.0.0", "body.stage1.0.1", 8, 3, 3);
    const int64_t s1[][2] = {{8, 16}, {16, 32}, {32, 32}, {32, 64}, {64, 64}};
    for (int i = 0; i < 5; ++i) dw("body.stage1." + std::to_string(i + 1), s1[i][0], s1[i][1]);
    dw("body.stage2.0", 64, 128);
    for (int i = 1; i <= 5; ++i) dw("body.stage2." + std::to_string(i), 128, 128);
    dw("body.stage3.0", 128, 256);
    dw("body.stage3.1", 256, 256);
  } else {
    unit("body.conv1", "body.bn1", 64, 3, 7);
    const int blocks[4] = {3, 4, 6, 3};
    int64_t inplanes = 64;
    for (int l = 0; l < 4; ++l) {
      int64_t planes = int64_t{64} << l;
      for (int k = 0; k < blocks[l]; ++k) {
        std::string p = "body.layer" + std::to_string(l + 1) + "." + std::to_string(k) + ".";
        unit(p + "conv1", p + "bn1", planes, inplanes, 1);
        unit(p + "conv2", p + "bn2", planes, planes, 3);
        unit(p + "conv3", p + "bn3", 4 * planes, planes, 1);
        if (k == 0) unit(p + "downsample.0", p + "downsample.1", 4 * planes, inplanes, 1);
        inplanes = 4 * planes;
      }
    }
  }
  int64_t c, o;
  retina_in_out(b, &c, &o);
  unit("fpn.output1.0", "fpn.output1.1", o, 2 * c, 1);
  unit("fpn.output2.0", "fpn.output2.1", o, 4 * c, 1);
  unit("fpn.output3.0", "fpn.output3.1", o, 8 * c, 1);
  unit("fpn.merge1.0", "fpn.merge1.1", o, o, 3);
  unit("fpn.merge2.0", "fpn.merge2.1", o, o, 3);
  for (int s = 1; s <= 3; ++s) {
    std::string p = "ssh" + std::to_string(s) + ".";
    unit(p + "conv3X3.0", p + "conv3X3.1", o / 2, o, 3);
    unit(p + "conv5X5_1.0", p + "conv5X5_1.1", o / 4, o, 3);
    unit(p + "conv5X5_2.0", p + "conv5X5_2.1", o / 4, o / 4, 3);
    unit(p + "conv7X7_2.0", p + "conv7X7_2.1", o / 4, o / 4, 3);
    unit(p + "conv7x7_3.0", p + "conv7x7_3.1", o / 4, o / 4, 3);
  }
  const std::pair<const char*, int64_t> heads[] = {{"ClassHead", 4}, {"BboxHead", 8}, {"LandmarkHead", 20}};
  for (const auto& [h, n] : heads)
    for (int i = 0; i < 3; ++i) {
      u.push_back({std::string(h) + "." + std::to_string(i) + ".conv1x1", "", n, o, 1, 1, true});
    }
  return u;
}

std::vector<TensorSpec> retinaface_layout(RetinaBackbone b) {
  std::vector<TensorSpec> t;
  for (const ConvUnit& u : retinaface_units(b)) {
    t.push_back({u.conv + ".weight", {u.out, u.in / u.groups, u.k, u.k}});
    if (u.conv_bias) t.push_back({u.conv + ".bias", {u.out}});
    if (!u.bn.empty()) {
      for (const char* p : {".weight", ".bias", ".running_mean", ".running_var"}) t.push_back({u.bn + p, {u.out}});
      t.push_back({u.bn + ".num_batches_tracked", {}, /*optional=*/true, /*integer=*/true});
    }
  }
  return t;
}

// ---- Recognition --------------------------------------------------------------------------

namespace {

const std::pair<Arch, const char*> kArchNames[] = {
    {Arch::gpen, "gpen"}, {Arch::retinaface, "retinaface"}, {Arch::realesrnet, "realesrnet"}, {Arch::parsenet, "parsenet"},
    {Arch::gfpgan, "gfpgan"}, {Arch::codeformer, "codeformer"}, {Arch::restoreformer, "restoreformer"}};

}  // namespace

const char* arch_name(Arch a) {
  for (const auto& [arch, name] : kArchNames)
    if (arch == a) return name;
  return "unknown";
}

Arch parse_arch(const std::string& s) {
  if (s == "auto" || s.empty()) return Arch::unknown;
  for (const auto& [arch, name] : kArchNames)
    if (s == name) return arch;
  throw Error("unknown architecture '" + s +
              "' (expected auto, gpen, retinaface, realesrnet, parsenet, gfpgan, codeformer or restoreformer)");
}

static const std::vector<int64_t>* shape_of(const ShapeMap& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? nullptr : &it->second;
}

static int64_t dim_of(const ShapeMap& m, const std::string& k, size_t rank, size_t axis) {
  const auto* s = shape_of(m, k);
  if (!s) throw Error("GPEN checkpoint lacks tensor '" + k + "'");
  if (s->size() != rank)
    throw Error("tensor '" + k + "' has shape " + shape_str(*s) + ", expected rank " + std::to_string(rank));
  return (*s)[axis];
}

static GpenConfig infer_gpen(const ShapeMap& m) {
  GpenConfig c;
  c.style_dim = static_cast<int>(std::min<int64_t>(dim_of(m, "generator.style.1.weight", 2, 0), 1 << 20));
  int n_mlp = 0;
  while (n_mlp < 64 && shape_of(m, "generator.style." + std::to_string(n_mlp + 1) + ".weight")) ++n_mlp;
  c.n_mlp = n_mlp;
  // The encoder has one layer per halving from S down to 4: ecd0 .. ecd{L-2}.
  if (!shape_of(m, "ecd0.0.0.weight")) throw Error("GPEN checkpoint lacks tensor 'ecd0.0.0.weight'");
  int enc = 1;
  while (enc < 16 && shape_of(m, "ecd" + std::to_string(enc) + ".0.1.weight")) ++enc;
  int L = enc + 1;
  if (L < 4 || L > 11) {
    throw Error("GPEN checkpoint has " + std::to_string(enc) +
                " encoder layers (ecd0..): not a size between 16 and 2048");
  }
  c.size = 1 << L;
  c.out_size = infer_gpen_out_size(m, L);
  int64_t c4 = dim_of(m, "generator.input.input", 4, 1);
  if (c4 < 1 || c4 > (1 << 20)) throw Error("tensor 'generator.input.input' has an invalid channel count");
  c.narrow = static_cast<double>(c4) / 512.0;  // exact: a dyadic fraction
  c.channel_multiplier = 2;                    // the official default; no shape depends on it below 64
  if (c.output_size() >= 64) {
    // convs.6 is the first conv at 64x64, with int(256 * cm * narrow) output channels.
    int64_t c64 = dim_of(m, "generator.convs.6.conv.weight", 5, 1);
    bool found = false;
    for (int cm = 1; cm <= 16 && !found; ++cm)
      if (static_cast<int64_t>(256 * static_cast<double>(cm) * c.narrow) == c64) {
        c.channel_multiplier = cm;
        found = true;
      }
    if (!found) c.channel_multiplier = static_cast<double>(c64) * 2.0 / static_cast<double>(c4);
  }
  c.check();
  return c;
}

Recognition recognize(const ShapeMap& shapes, Arch want) {
  Recognition r;
  if (want == Arch::gfpgan || (want == Arch::unknown && looks_like_gfpgan(shapes))) return recognize_gfpgan(shapes);
  if (want == Arch::codeformer || (want == Arch::unknown && looks_like_codeformer(shapes)))
    return recognize_codeformer(shapes);
  if (want == Arch::restoreformer || (want == Arch::unknown && looks_like_restoreformer(shapes)))
    return recognize_restoreformer(shapes);
  if (want == Arch::unknown && looks_like_realesrnet(shapes)) want = Arch::realesrnet;
  if (want == Arch::realesrnet) {
    r.arch = want;
    r.realesrnet = infer_realesrnet(shapes);
    r.config = r.realesrnet.to_json();
    r.layout = realesrnet_layout(r.realesrnet);
    return r;
  }
  if (want == Arch::unknown && (shapes.count("out_mask_conv.conv2d.weight") || shapes.count("encoder.0.conv2d.weight")))
    want = Arch::parsenet;
  if (want == Arch::parsenet) {
    r.arch = want;
    r.config = parsenet_config();
    r.layout = parsenet_layout();
    return r;
  }
  if (want == Arch::unknown) {
    bool gpen = shapes.count("generator.style.1.weight") || shapes.count("final_linear.0.weight") ||
                shapes.count("ecd0.0.0.weight") || shapes.count("generator.input.input");
    bool retina = false;
    for (const auto& [k, v] : shapes)
      if (k.rfind("body.stage1.", 0) == 0 || k.rfind("body.layer1.", 0) == 0 || k.rfind("ClassHead.", 0) == 0 ||
          k.rfind("fpn.", 0) == 0) {
        retina = true;
        break;
      }
    if (gpen == retina) {
      std::string first;
      int n = 0;
      for (const auto& [k, v] : shapes) {
        if (n++ == 4) break;
        first += (first.empty() ? "" : ", ") + k;
      }
      throw Error(std::string(gpen ? "ambiguous state dict (both GPEN and RetinaFace keys)"
                                   : "not a GPEN or RetinaFace state dict") +
                  " (keys: " + (first.empty() ? "none" : first) + ", ...); use --arch");
    }
    want = gpen ? Arch::gpen : Arch::retinaface;
  }
  r.arch = want;
  if (want == Arch::gpen) {
    r.gpen = infer_gpen(shapes);
    r.config = r.gpen.to_json();
    r.layout = gpen_layout(r.gpen);
  } else {
    bool mobile = shapes.count("body.stage1.0.0.weight") > 0;
    bool resnet = shapes.count("body.conv1.weight") > 0 || shapes.count("body.layer1.0.conv1.weight") > 0;
    if (mobile == resnet)
      throw Error("RetinaFace backbone not recognised (expected body.stage1.* for mobilenet0.25 or body.layer1.* for resnet50)");
    r.backbone = mobile ? RetinaBackbone::mobilenet025 : RetinaBackbone::resnet50;
    r.config = retinaface_config(r.backbone);
    r.layout = retinaface_layout(r.backbone);
  }
  return r;
}

std::vector<std::string> validate_layout(const std::vector<TensorSpec>& layout, const ShapeMap& shapes) {
  std::set<std::string> known;
  for (const TensorSpec& s : layout) {
    known.insert(s.name);
    if (s.integer) continue;  // BatchNorm counters are ignored, whatever their shape
    const auto* have = shape_of(shapes, s.name);
    if (!have) {
      if (s.optional) continue;
      throw Error("missing tensor '" + s.name + "' (expected shape " + shape_str(s.shape) + ")");
    }
    if (*have != s.shape)
      throw Error("tensor '" + s.name + "' has shape " + shape_str(*have) + ", expected " + shape_str(s.shape));
  }
  std::vector<std::string> extra;
  for (const auto& [k, v] : shapes)
    if (!known.count(k)) extra.push_back(k);
  return extra;
}

}  // namespace gpen::conv
