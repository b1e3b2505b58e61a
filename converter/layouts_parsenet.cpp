// The layout of ParseNet-latest.pth (GPEN's face parser, gpen-semantics.md "Face parsing mask"):
// ParseNet(512, 512, 32, 64, 19, norm_type='bn', relu_type='LeakyReLU', ch_range=[32, 256]).
// The architecture has no free size parameter, so recognition checks one fixed layout.
#include "converter/layouts.h"

namespace gpen::conv {

std::vector<ConvUnit> parsenet_units() {
  std::vector<ConvUnit> u;
  auto conv = [&](const std::string& p, int64_t in, int64_t out, bool bn) {
    u.push_back({p + ".conv2d", bn ? p + ".norm.norm" : "", out, in, 3, 1, !bn});
  };
  // ResidualBlock: shortcut_func (conv + bias) unless scale 'none' with in == out, conv1 and
  // conv2 each followed by a BatchNorm, in the official state-dict order.
  auto block = [&](const std::string& p, int64_t in, int64_t out, bool shortcut) {
    if (shortcut) conv(p + ".shortcut_func", in, out, false);
    conv(p + ".conv1", in, out, true);
    conv(p + ".conv2", out, out, true);
  };
  conv("encoder.0", 3, 64, false);
  const int64_t enc[4][2] = {{64, 128}, {128, 256}, {256, 256}, {256, 256}};
  for (int i = 0; i < 4; ++i) block("encoder." + std::to_string(i + 1), enc[i][0], enc[i][1], true);
  for (int i = 0; i < 10; ++i) block("body." + std::to_string(i), 256, 256, false);
  const int64_t dec[4][2] = {{256, 256}, {256, 256}, {256, 128}, {128, 64}};
  for (int i = 0; i < 4; ++i) block("decoder." + std::to_string(i), dec[i][0], dec[i][1], true);
  conv("out_img_conv", 64, 3, false);
  conv("out_mask_conv", 64, 19, false);
  return u;
}

std::vector<TensorSpec> parsenet_layout() {
  std::vector<TensorSpec> t;
  for (const ConvUnit& u : parsenet_units()) {
    t.push_back({u.conv + ".weight", {u.out, u.in, u.k, u.k}});
    if (u.conv_bias) t.push_back({u.conv + ".bias", {u.out}});
    if (!u.bn.empty()) {
      for (const char* p : {".weight", ".bias", ".running_mean", ".running_var"}) t.push_back({u.bn + p, {u.out}});
      t.push_back({u.bn + ".num_batches_tracked", {}, /*optional=*/true, /*integer=*/true});
    }
  }
  return t;
}

nlohmann::json parsenet_config() {
  return {{"in_size", 512},       {"out_size", 512},       {"min_feat_size", 32},
          {"base_ch", 64},        {"parsing_ch", 19},      {"res_depth", 10},
          {"norm_type", "bn"},    {"relu_type", "LeakyReLU"}, {"ch_range", {32, 256}}};
}

}  // namespace gpen::conv
