// ParseNet: the graph (encoder of four down blocks, ten residual blocks at 1/16, decoder of four
// up blocks, the 19-class head) and ParseNetModel, its runner.
#include "engine/models/parsenet.h"

#include <cstring>

#include "kernels/cpu/parse_labels.h"
#include "weights/gpw.h"

namespace gpen {

namespace {

struct Builder {
  Graph& g;
  int64_t N;

  int64_t channels(int x) const { return g.tensor(x).shape[3]; }

  // Conv (3x3, reflection pad 1 before; the BatchNorm folded into weight and bias by the
  // converter) on an already padded input.
  int conv_padded(int padded, const std::string& prefix, int64_t cin, int64_t cout, int stride, bool lrelu,
                  int residual = -1) {
    const int w = g.weight(prefix + ".conv2d.weight", DType::f32, Shape{3, 3, cin, cout});
    const int b = g.weight(prefix + ".conv2d.bias", DType::f32, Shape{cout});
    Conv2dParams p;
    p.kh = p.kw = 3;
    p.stride_h = p.stride_w = stride;
    p.has_bias = true;
    p.has_residual = residual >= 0;
    p.act = lrelu ? Activation::leaky(0.2f) : Activation::none();
    return g.conv2d(padded, w, b, p, residual, -1, prefix);
  }
  int pad(int x, int up, const std::string& name) { return g.pad_reflect(x, PadReflectParams{1, up}, name); }
  int conv(int x, const std::string& prefix, int64_t cout, int stride, bool lrelu, int residual = -1) {
    return conv_padded(pad(x, 1, prefix + ".pad"), prefix, channels(x), cout, stride, lrelu, residual);
  }

  // out = shortcut(x) + BN2(conv2(lrelu(BN1(conv1(x))))), no activation after the sum: the
  // shortcut (or x itself) is conv2's residual.
  int block(int x, const std::string& p, int64_t cout, const char* scale) {
    const int64_t cin = channels(x);
    const std::string s = scale;
    if (s == "down") {
      const int px = pad(x, 1, p + ".pad");  // shortcut and conv1 read the same padded x
      const int sc = conv_padded(px, p + ".shortcut_func", cin, cout, 2, false);
      const int t = conv_padded(px, p + ".conv1", cin, cout, 1, true);
      return conv(t, p + ".conv2", cout, 2, false, sc);
    }
    if (s == "up") {
      const int px = pad(x, 2, p + ".up_pad");  // up2 + pad, shared by shortcut and conv1
      const int sc = conv_padded(px, p + ".shortcut_func", cin, cout, 1, false);
      const int t = conv_padded(px, p + ".conv1", cin, cout, 1, true);
      return conv(t, p + ".conv2", cout, 1, false, sc);
    }
    const int t = conv(x, p + ".conv1", cout, 1, true);
    return conv(t, p + ".conv2", cout, 1, false, x);
  }
};

}  // namespace

ParseNetGraph build_parsenet_graph(int h, int w, int batch, bool with_image, int channel_div) {
  GPEN_CHECK(h >= 32 && w >= 32 && h <= 4096 && w <= 4096 && h % 16 == 0 && w % 16 == 0,
             "ParseNet: input " + std::to_string(w) + "x" + std::to_string(h) +
                 " must be a multiple of 16 between 32 and 4096 on each side");
  GPEN_CHECK(batch >= 1 && batch <= 1024, "ParseNet: batch " + std::to_string(batch) + " out of range");
  GPEN_CHECK(channel_div == 1 || channel_div == 2 || channel_div == 4 || channel_div == 8 || channel_div == 16,
             "ParseNet: channel_div must be 1, 2, 4, 8 or 16");
  const int64_t d = channel_div;
  ParseNetGraph pg;
  Graph& g = pg.graph;
  Builder b{g, batch};
  pg.input = g.input("input", DType::f32, Shape{batch, h, w, 3});
  int x = b.conv(pg.input, "encoder.0", 64 / d, 1, false);
  const int64_t enc[4] = {128 / d, 256 / d, 256 / d, 256 / d};
  for (int i = 0; i < 4; ++i) x = b.block(x, "encoder." + std::to_string(i + 1), enc[i], "down");
  const int feat = x;
  for (int i = 0; i < 10; ++i) x = b.block(x, "body." + std::to_string(i), 256 / d, "none");
  x = g.add(feat, x, AddParams{}, -1, "body.sum");
  const int64_t dec[4] = {256 / d, 256 / d, 128 / d, 64 / d};
  for (int i = 0; i < 4; ++i) x = b.block(x, "decoder." + std::to_string(i), dec[i], "up");
  const int px = b.pad(x, 1, "head.pad");
  pg.logits = b.conv_padded(px, "out_mask_conv", 64 / d, kParseClasses, 1, false);
  g.mark_output(pg.logits);
  if (with_image) {
    pg.image = b.conv_padded(px, "out_img_conv", 64 / d, 3, 1, false);
    g.mark_output(pg.image);
  }
  return pg;
}

ParseNetModel::ParseNetModel(const std::string& path, Backend& backend) : net_(path, backend) {
  const GpwFile& f = net_.file();
  GPEN_CHECK(f.arch() == "parsenet", path + ": not a ParseNet model (arch '" + f.arch() + "')");
  net_.bind_weights(build_parsenet_graph(32, 32, 1, false).graph, "ParseNet");
}

ParseNetModel::~ParseNetModel() = default;

const MemoryPlan& ParseNetModel::plan_for(int h, int w) {
  if (net_.holds({double(h), double(w)})) return net_.plan();
  ParseNetGraph pg = build_parsenet_graph(h, w);
  return net_.install({double(h), double(w)}, std::move(pg.graph), {{"input", pg.input}, {"logits", pg.logits}});
}

void ParseNetModel::prepare(int h, int w) {
  plan_for(h, w);
  net_.prepare();
}

void ParseNetModel::share_memory(void* arena, size_t arena_bytes, void* ws, size_t ws_bytes) {
  net_.share_memory(arena, arena_bytes, ws, ws_bytes);
}

void ParseNetModel::run(const float* in, int h, int w, float* logits) {
  prepare(h, w);
  net_.run({{"input", in}}, {{"logits", logits}});
}

std::vector<double> ParseNetModel::run_profiled(const float* in) {
  GPEN_CHECK(net_.prepared(), "ParseNet: prepare() before run_profiled()");
  return net_.run_profiled({{"input", in}});
}

void ParseNetModel::parse(const float* in, int h, int w, uint8_t* labels, uint8_t* mask) {
  logits_.resize(static_cast<size_t>(h) * static_cast<size_t>(w) * kParseClasses);
  run(in, h, w, logits_.data());
  cpu::parse_labels(make_view(logits_.data(), DType::f32, Shape{1, h, w, kParseClasses}), labels, mask);
}

}  // namespace gpen
