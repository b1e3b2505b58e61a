// RealESRNet's RRDBNet layout (gpen-semantics.md, "Background super-resolution";
// checkpoint_layouts.json realesrnet_x1/x2/x4) and its configuration from the shapes.
#include <string>

#include "converter/layouts.h"
#include "engine/core/error.h"

namespace gpen::conv {

void RealesrnetConfig::check() const {
  if (scale != 1 && scale != 2 && scale != 4)
    throw Error("RealESRNet: scale " + std::to_string(scale) + " is not 1, 2 or 4");
  auto in_range = [](const char* what, int v, int hi) {
    if (v < 1 || v > hi) throw Error(std::string("RealESRNet: ") + what + " " + std::to_string(v) + " is out of range 1.." + std::to_string(hi));
  };
  in_range("num_feat", num_feat, 1024);
  in_range("num_grow_ch", num_grow_ch, 1024);
  in_range("num_block", num_block, 256);
  in_range("num_in_ch", num_in_ch, 64);
  in_range("num_out_ch", num_out_ch, 64);
}

nlohmann::json RealesrnetConfig::to_json() const {
  return {{"scale", scale},         {"num_in_ch", num_in_ch}, {"num_out_ch", num_out_ch},
          {"num_feat", num_feat},   {"num_block", num_block}, {"num_grow_ch", num_grow_ch}};
}

RealesrnetConfig RealesrnetConfig::from_json(const nlohmann::json& j) {
  RealesrnetConfig c;
  auto get = [&](const char* k, int def, bool required) {
    if (!j.is_object() || !j.contains(k)) {
      if (required) throw Error(std::string("RealESRNet config: missing '") + k + "'");
      return def;
    }
    if (!j[k].is_number_integer() || j[k].get<int64_t>() < 0 || j[k].get<int64_t>() > 4096)
      throw Error(std::string("RealESRNet config: '") + k + "' is not a valid integer");
    return static_cast<int>(j[k].get<int64_t>());
  };
  c.scale = get("scale", 0, true);
  c.num_in_ch = get("num_in_ch", 3, false);
  c.num_out_ch = get("num_out_ch", 3, false);
  c.num_feat = get("num_feat", 32, false);
  c.num_block = get("num_block", 23, false);
  c.num_grow_ch = get("num_grow_ch", 32, false);
  c.check();
  return c;
}

std::vector<TensorSpec> realesrnet_layout(const RealesrnetConfig& c) {
  c.check();
  std::vector<TensorSpec> t;
  const int64_t nf = c.num_feat, gc = c.num_grow_ch;
  auto conv = [&](const std::string& p, int64_t out, int64_t in) {
    t.push_back({p + ".weight", {out, in, 3, 3}});
    t.push_back({p + ".bias", {out}});
  };
  conv("conv_first", nf, int64_t{c.num_in_ch} * c.unshuffle() * c.unshuffle());
  for (int b = 0; b < c.num_block; ++b)
    for (int r = 1; r <= 3; ++r) {
      const std::string p = "body." + std::to_string(b) + ".rdb" + std::to_string(r) + ".conv";
      for (int k = 1; k <= 4; ++k) conv(p + std::to_string(k), gc, nf + (k - 1) * gc);
      conv(p + "5", nf, nf + 4 * gc);
    }
  for (const char* n : {"conv_body", "conv_up1", "conv_up2", "conv_hr"}) conv(n, nf, nf);
  conv("conv_last", c.num_out_ch, nf);
  return t;
}

bool looks_like_realesrnet(const ShapeMap& shapes) {
  return shapes.count("conv_first.weight") && shapes.count("conv_body.weight");
}

RealesrnetConfig infer_realesrnet(const ShapeMap& m) {
  auto shape = [&](const std::string& k, size_t rank) -> const std::vector<int64_t>& {
    auto it = m.find(k);
    if (it == m.end()) throw Error("RealESRNet checkpoint lacks tensor '" + k + "'");
    if (it->second.size() != rank)
      throw Error("tensor '" + k + "' has shape " + shape_str(it->second) + ", expected rank " + std::to_string(rank));
    return it->second;
  };
  RealesrnetConfig c;
  const auto& first = shape("conv_first.weight", 4);
  const auto& last = shape("conv_last.weight", 4);
  const auto& rdb = shape("body.0.rdb1.conv1.weight", 4);
  c.num_feat = static_cast<int>(std::min<int64_t>(first[0], 1 << 20));
  c.num_grow_ch = static_cast<int>(std::min<int64_t>(rdb[0], 1 << 20));
  c.num_out_ch = static_cast<int>(std::min<int64_t>(last[0], 1 << 20));
  // conv_first sees num_in_ch * f * f channels: 48 / 12 / 3 for x1 / x2 / x4 with RGB input. The
  // official models are RGB, so the channel count decides the scale.
  const int64_t cin = first[1];
  c.num_in_ch = 3;
  if (cin == 48) c.scale = 1;
  else if (cin == 12) c.scale = 2;
  else if (cin == 3) c.scale = 4;
  else
    throw Error("tensor 'conv_first.weight' has " + std::to_string(cin) +
                " input channels: not 48, 12 or 3 (RGB at scale 1, 2 or 4)");
  int nb = 0;
  while (nb < 256 && m.count("body." + std::to_string(nb) + ".rdb1.conv1.weight")) ++nb;
  c.num_block = nb;
  c.check();
  return c;
}

}  // namespace gpen::conv
