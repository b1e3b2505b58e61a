// RRDBNet's graph (layout of the buffers and why: engine/models/rrdbnet.h) and its plan.
#include "engine/models/rrdbnet.h"

#include <map>

#include "engine/core/error.h"

namespace gpen {

void RrdbConfig::check() const {
  GPEN_CHECK(scale == 1 || scale == 2 || scale == 4, "RealESRNet: scale " + std::to_string(scale) + " is not 1, 2 or 4");
  GPEN_CHECK(num_feat >= 1 && num_feat <= 1024 && num_grow_ch >= 1 && num_grow_ch <= 1024 && num_block >= 1 &&
                 num_block <= 256 && num_in_ch >= 1 && num_in_ch <= 64 && num_out_ch >= 1 && num_out_ch <= 64,
             "RealESRNet: configuration out of range");
}

std::string RrdbConfig::describe() const {
  return "RealESRNet x" + std::to_string(scale) + " (RRDBNet " + std::to_string(num_feat) + " features, " +
         std::to_string(num_block) + " blocks, growth " + std::to_string(num_grow_ch) + ")";
}

RrdbConfig rrdb_config_from_gpw(const GpwFile& f) {
  GPEN_CHECK(f.arch() == "realesrnet", f.path() + " holds a '" + f.arch() + "' model, not RealESRNet");
  const auto& j = f.config();
  RrdbConfig c;
  try {
    c.scale = j.at("scale").get<int>();
    c.num_in_ch = j.value("num_in_ch", 3);
    c.num_out_ch = j.value("num_out_ch", 3);
    c.num_feat = j.value("num_feat", 32);
    c.num_block = j.value("num_block", 23);
    c.num_grow_ch = j.value("num_grow_ch", 32);
  } catch (const std::exception& e) {
    throw Error(f.path() + ": RealESRNet configuration incomplete in the header (" + e.what() + ")");
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
  Graph& g;
  std::map<std::string, int> weights;  // conv_first is used twice: one weight tensor
  int weight(const std::string& name, const Shape& s) {
    auto it = weights.find(name);
    if (it != weights.end()) return it->second;
    return weights[name] = g.weight(name, g.activation_dtype(), s);
  }
  int conv(int x, const std::string& path, int64_t cin, int64_t cout, Activation act, int residual = -1, int out = -1,
           const std::string& name = "") {
    int w = weight(path + ".weight", Shape{3, 3, cin, cout});
    int b = weight(path + ".bias", Shape{cout});
    Conv2dParams p;
    p.kh = p.kw = 3;
    p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
    p.act = act;
    return g.conv2d(x, w, b, p, residual, out, name.empty() ? path : name);
  }
};

}  // namespace

RrdbGraph build_rrdbnet_graph(const RrdbConfig& c, int h, int w, DType act) {
  c.check();
  const int f = c.unshuffle();
  GPEN_CHECK(h >= f && w >= f && h % f == 0 && w % f == 0 && h <= 65536 && w <= 65536,
             "RRDBNet input " + std::to_string(w) + "x" + std::to_string(h) + " is not a positive multiple of " +
                 std::to_string(f) + " (scale " + std::to_string(c.scale) + ")");
  RrdbGraph r;
  Graph& g = r.graph;
  g.set_activation_dtype(act);
  Builder b{g, {}};
  const int64_t nf = c.num_feat, gc = c.num_grow_ch, width = nf + 4 * gc;
  r.input = g.input("input", act, Shape{1, h, w, c.num_in_ch});
  const int f0 = f == 1 ? r.input : g.pixel_unshuffle(r.input, f, "unshuffle");
  const int64_t cin = int64_t{c.num_in_ch} * f * f;
  const int64_t H = h / f, W = w / f;
  const Activation lrelu = Activation::leaky(0.2f);
  const Activation fifth{1.0f, 0.2f};  // x * 0.2, exactly
  auto rdb_buffer = [&](const std::string& name) { return g.buffer(name, act, Shape{1, H, W, width}); };
  // The trunk skip keeps f; the first RDB gets its own copy, computed again (see rrdbnet.h).
  const int feat = b.conv(f0, "conv_first", cin, nf, Activation::none());
  int buf = rdb_buffer("body.0.rdb1.cat");
  b.conv(f0, "conv_first", cin, nf, Activation::none(), -1, g.slice_channels(buf, 0, nf), "conv_first.into_body");
  int trunk = -1;
  for (int blk = 0; blk < c.num_block; ++blk) {
    const std::string bp = "body." + std::to_string(blk);
    const int rrdb_in_buf = buf;
    const int rrdb_in = g.slice_channels(rrdb_in_buf, 0, nf);
    int rdb3_out = -1;
    for (int r3 = 1; r3 <= 3; ++r3) {
      const std::string p = bp + ".rdb" + std::to_string(r3);
      const int t = g.slice_channels(buf, 0, nf);
      for (int k = 1; k <= 4; ++k) {
        const int in = g.slice_channels(buf, 0, nf + (k - 1) * gc);
        b.conv(in, p + ".conv" + std::to_string(k), nf + (k - 1) * gc, gc, lrelu, -1,
               g.slice_channels(buf, nf + (k - 1) * gc, gc));
      }
      if (r3 < 3) {
        const int next = rdb_buffer(bp + ".rdb" + std::to_string(r3 + 1) + ".cat");
        b.conv(buf, p + ".conv5", width, nf, fifth, t, g.slice_channels(next, 0, nf));
        buf = next;
      } else {
        rdb3_out = b.conv(buf, p + ".conv5", width, nf, fifth, t);
      }
    }
    const int scaled = g.bias_act(rdb3_out, -1, BiasActParams{false, fifth}, -1, bp + ".scale");
    if (blk + 1 < c.num_block) {
      buf = rdb_buffer("body." + std::to_string(blk + 1) + ".rdb1.cat");
      g.add(scaled, rrdb_in, AddParams{}, g.slice_channels(buf, 0, nf), bp + ".skip");
    } else {
      trunk = g.add(scaled, rrdb_in, AddParams{}, -1, bp + ".skip");
    }
  }
  const int fb = b.conv(trunk, "conv_body", nf, nf, Activation::none(), feat);
  const int up1 = g.resize_nearest(fb, static_cast<int>(2 * H), static_cast<int>(2 * W), "up1");
  const int u1 = b.conv(up1, "conv_up1", nf, nf, lrelu);
  const int up2 = g.resize_nearest(u1, static_cast<int>(4 * H), static_cast<int>(4 * W), "up2");
  const int u2 = b.conv(up2, "conv_up2", nf, nf, lrelu);
  const int hr = b.conv(u2, "conv_hr", nf, nf, lrelu);
  r.output = b.conv(hr, "conv_last", nf, c.num_out_ch, Activation::none());
  g.mark_output(r.output);
  return r;
}

MemoryPlan plan_rrdbnet(const RrdbConfig& c, int h, int w, DType act, const WorkspaceFn& ws) {
  RrdbGraph rg = build_rrdbnet_graph(c, h, w, act);
  return plan_memory(rg.graph, ws);
}

}  // namespace gpen
