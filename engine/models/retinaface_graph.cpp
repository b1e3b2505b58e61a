// RetinaFace's graph: the mobilenet0.25 and ResNet-50 backbones, the FPN, the SSH modules and the
// heads, built for one input size (the detector that runs it: engine/models/retinaface.cpp).
#include <array>
#include <map>
#include <string>

#include "engine/models/retinaface.h"

namespace gpen {

namespace {

struct Builder {
  Graph& g;
  bool trace;
  std::map<std::string, int>& taps;

  // A conv whose BatchNorm the converter folded: weight HWIO, bias [cout], padding k / 2.
  int conv(int x, const std::string& path, int cin, int cout, int k, int stride, Activation act, int groups = 1,
           int residual = -1, int out = -1, bool act_after_residual = false) {
    int w = g.weight(path + ".weight", DType::f32, Shape{k, k, cin / groups, cout});
    int b = g.weight(path + ".bias", DType::f32, Shape{cout});
    Conv2dParams p;
    p.kh = p.kw = k;
    p.stride_h = p.stride_w = stride;
    p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = k / 2;
    p.groups = groups;
    p.act = act;
    p.act_after_residual = act_after_residual;
    return g.conv2d(x, w, b, p, residual, out, path);
  }
  void tap(const std::string& name, int t) {
    if (!trace) return;
    g.mark_output(t);
    taps[name] = t;
  }
  int64_t H(int t) const { return g.tensor(t).shape[1]; }
  int64_t W(int t) const { return g.tensor(t).shape[2]; }
};

// Returns the stride-8, -16 and -32 features.
std::array<int, 3> mobilenet025(Builder& b, int x) {
  const Activation lr = Activation::leaky(0.1f);
  auto dw = [&](int t, const std::string& p, int cin, int cout, int stride) {
    t = b.conv(t, p + ".0", cin, cin, 3, stride, lr, cin);
    return b.conv(t, p + ".3", cin, cout, 1, 1, lr);
  };
  x = b.conv(x, "body.stage1.0.0", 3, 8, 3, 2, lr);
  b.tap("body.stage1.0", x);
  const int s1[5][3] = {{8, 16, 1}, {16, 32, 2}, {32, 32, 1}, {32, 64, 2}, {64, 64, 1}};
  for (int i = 0; i < 5; ++i) {
    std::string p = "body.stage1." + std::to_string(i + 1);
    x = dw(x, p, s1[i][0], s1[i][1], s1[i][2]);
    b.tap(p, x);
  }
  const int f1 = x;
  for (int i = 0; i < 6; ++i) {
    std::string p = "body.stage2." + std::to_string(i);
    x = dw(x, p, i == 0 ? 64 : 128, 128, i == 0 ? 2 : 1);
    b.tap(p, x);
  }
  const int f2 = x;
  for (int i = 0; i < 2; ++i) {
    std::string p = "body.stage3." + std::to_string(i);
    x = dw(x, p, i == 0 ? 128 : 256, 256, i == 0 ? 2 : 1);
    b.tap(p, x);
  }
  return {f1, f2, x};
}

std::array<int, 3> resnet50(Builder& b, int x) {
  const Activation relu = Activation::relu();
  x = b.conv(x, "body.conv1", 3, 64, 7, 2, relu);
  x = b.g.max_pool2d(x, MaxPool2dParams{}, "body.maxpool");
  b.tap("body.stem", x);
  const int blocks[4] = {3, 4, 6, 3};
  int cin = 64;
  std::array<int, 3> feats{};
  for (int l = 0; l < 4; ++l) {
    const int planes = 64 << l;
    for (int k = 0; k < blocks[l]; ++k) {
      const std::string p = "body.layer" + std::to_string(l + 1) + "." + std::to_string(k) + ".";
      const int stride = (k == 0 && l > 0) ? 2 : 1;
      int y = b.conv(x, p + "conv1", cin, planes, 1, 1, relu);
      y = b.conv(y, p + "conv2", planes, planes, 3, stride, relu);
      const int idn = k == 0 ? b.conv(x, p + "downsample.0", cin, 4 * planes, 1, stride, Activation::none()) : x;
      // relu(bn3(conv3) + identity): the conv's epilogue applies the relu after the residual.
      x = b.conv(y, p + "conv3", planes, 4 * planes, 1, 1, relu, 1, idn, -1, true);
      cin = 4 * planes;
    }
    b.tap("body.layer" + std::to_string(l + 1), x);
    if (l >= 1) feats[l - 1] = x;
  }
  return feats;
}

// SSH: the three branches write their channel slices of one buffer; relu(concat) is each
// branch's own epilogue relu, so there is neither a concat copy nor a separate relu pass.
int ssh(Builder& b, int x, const std::string& p, int c, Activation act) {
  Graph& g = b.g;
  const int buf = g.buffer(p, g.activation_dtype(), Shape{1, b.H(x), b.W(x), c});
  const Activation relu = Activation::relu();
  b.conv(x, p + ".conv3X3.0", c, c / 2, 3, 1, relu, 1, -1, g.slice_channels(buf, 0, c / 2));
  const int t = b.conv(x, p + ".conv5X5_1.0", c, c / 4, 3, 1, act);
  b.conv(t, p + ".conv5X5_2.0", c / 4, c / 4, 3, 1, relu, 1, -1, g.slice_channels(buf, c / 2, c / 4));
  const int u = b.conv(t, p + ".conv7X7_2.0", c / 4, c / 4, 3, 1, act);
  b.conv(u, p + ".conv7x7_3.0", c / 4, c / 4, 3, 1, relu, 1, -1, g.slice_channels(buf, 3 * c / 4, c / 4));
  return buf;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

const char* retinaface_backbone_name(RetinaFaceBackbone b) {
  return b == RetinaFaceBackbone::resnet50 ? "resnet50" : "mobilenet0.25";
}

RetinaFaceBackbone parse_retinaface_backbone(const std::string& s) {
  if (s == "mobilenet0.25" || s == "mnet" || s == "mobilenet") return RetinaFaceBackbone::mobilenet025;
  if (s == "resnet50" || s == "r50" || s == "Resnet50") return RetinaFaceBackbone::resnet50;
  throw Error("unknown RetinaFace backbone '" + s + "' (expected mobilenet0.25 or resnet50)");
}

RetinaFaceGraph build_retinaface_graph(RetinaFaceBackbone bb, int h, int w, bool trace) {
  GPEN_CHECK(h >= 1 && w >= 1 && h <= 16384 && w <= 16384,
             "RetinaFace input size " + std::to_string(w) + "x" + std::to_string(h) + " is out of range (1..16384)");
  RetinaFaceGraph r;
  Graph& g = r.graph;
  Builder b{g, trace, r.taps};
  r.input = g.input("input", DType::f32, Shape{1, h, w, 3});
  const bool mnet = bb == RetinaFaceBackbone::mobilenet025;
  const int in_ch = mnet ? 32 : 256, out_ch = mnet ? 64 : 256;
  const Activation act = mnet ? Activation::leaky(0.1f) : Activation::relu();
  std::array<int, 3> f = mnet ? mobilenet025(b, r.input) : resnet50(b, r.input);

  // FPN top-down. The lateral conv's epilogue adds the upsampled coarser level after its
  // activation: exactly output_k + nearest(merged_{k+1}).
  int o3 = b.conv(f[2], "fpn.output3.0", 8 * in_ch, out_ch, 1, 1, act);
  int up3 = g.resize_nearest(o3, static_cast<int>(b.H(f[1])), static_cast<int>(b.W(f[1])), "fpn.up3");
  int o2 = b.conv(f[1], "fpn.output2.0", 4 * in_ch, out_ch, 1, 1, act, 1, up3);
  o2 = b.conv(o2, "fpn.merge2.0", out_ch, out_ch, 3, 1, act);
  int up2 = g.resize_nearest(o2, static_cast<int>(b.H(f[0])), static_cast<int>(b.W(f[0])), "fpn.up2");
  int o1 = b.conv(f[0], "fpn.output1.0", 2 * in_ch, out_ch, 1, 1, act, 1, up2);
  o1 = b.conv(o1, "fpn.merge1.0", out_ch, out_ch, 3, 1, act);
  const int fpn[3] = {o1, o2, o3};

  // Heads write their rows of the concatenated [P, k] outputs directly: in NHWC the official
  // permute(0, 2, 3, 1) is the identity, so level l's rows are one contiguous window.
  int64_t P = 0;
  int64_t rows[3];
  for (int l = 0; l < 3; ++l) {
    GPEN_CHECK(b.H(fpn[l]) == ceil_div(h, 8 << l) && b.W(fpn[l]) == ceil_div(w, 8 << l),
               "RetinaFace level size does not match the priors");
    rows[l] = b.H(fpn[l]) * b.W(fpn[l]) * 2;
    P += rows[l];
  }
  const int loc_buf = g.buffer("loc", DType::f32, Shape{P * 4});
  const int logit_buf = g.buffer("conf_logits", DType::f32, Shape{P * 2});
  const int lm_buf = g.buffer("landms", DType::f32, Shape{P * 10});
  int64_t off = 0;
  for (int l = 0; l < 3; ++l) {
    const std::string ls = std::to_string(l + 1);
    const int s = ssh(b, fpn[l], "ssh" + ls, out_ch, act);
    b.tap("fpn.out" + ls, fpn[l]);
    b.tap("ssh" + ls, s);
    const int64_t hh = b.H(s), ww = b.W(s);
    auto head = [&](int buf, const char* name, const char* tap, int k) {
      int v = g.slice_channels(buf, off * k, rows[l] * k);
      v = g.reshape(v, Shape{1, hh, ww, 2 * k});
      b.conv(s, std::string(name) + "." + std::to_string(l) + ".conv1x1", out_ch, 2 * k, 1, 1, Activation::none(), 1,
             -1, v);
      if (trace) r.taps[std::string(tap) + ls] = v;
    };
    head(logit_buf, "ClassHead", "head.class", 2);
    head(loc_buf, "BboxHead", "head.bbox", 4);
    head(lm_buf, "LandmarkHead", "head.landmark", 10);
    off += rows[l];
  }
  r.loc = g.reshape(loc_buf, Shape{P, 4}, "loc_rows");
  r.landms = g.reshape(lm_buf, Shape{P, 10}, "landms_rows");
  const int logits = g.reshape(logit_buf, Shape{P, 2}, "conf_logits_rows");
  b.tap("conf_logits", logits);
  r.conf = g.softmax(logits, "conf");
  g.mark_output(r.loc);
  g.mark_output(r.landms);
  g.mark_output(r.conf);
  return r;
}

}  // namespace gpen
