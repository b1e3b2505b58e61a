// RealESRNet.process and tile_process (gpen-semantics.md) around RrdbModel; the tile from the
// plan. Corrections of the official code: engine/photo/super_resolution.h.
#include "engine/photo/super_resolution.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include "engine/core/error.h"
#include "engine/runtime/device.h"

namespace gpen {

namespace {

// One axis of a tile: core [a0, a1) of n, cut [c0, c1) widened by the pad and then, unless
// official, to a multiple of m with pixels of the image.
bool cut_axis(int a0, int a1, int n, int m, int pad, bool official, int* c0, int* c1) {
  *c0 = std::max(a0 - pad, 0);
  *c1 = std::min(a1 + pad, n);
  int need = (m - (*c1 - *c0) % m) % m;
  if (need == 0 || official) return false;
  const int e = std::min(need, n - *c1);
  *c1 += e;
  need -= e;
  // n is a multiple of m, so the rest fits before c0 (c0 - need = c0 - c0 % m >= 0).
  *c0 -= need;
  return true;
}

std::vector<SrTile> tiles_for(int h, int w, int tile, int m, bool official, int pad = kSrTilePad) {
  std::vector<SrTile> t;
  if (tile <= 0) {
    t.push_back({0, h, 0, w, 0, h, 0, w, false});
    return t;
  }
  const int ny = (h + tile - 1) / tile, nx = (w + tile - 1) / tile;
  for (int ty = 0; ty < ny; ++ty)
    for (int tx = 0; tx < nx; ++tx) {
      SrTile s{};
      s.y0 = ty * tile;
      s.y1 = std::min(s.y0 + tile, h);
      s.x0 = tx * tile;
      s.x1 = std::min(s.x0 + tile, w);
      const bool ey = cut_axis(s.y0, s.y1, h, m, pad, official, &s.cy0, &s.cy1);
      const bool ex = cut_axis(s.x0, s.x1, w, m, pad, official, &s.cx0, &s.cx1);
      s.extended = ey || ex;
      t.push_back(s);
    }
  return t;
}

int pad_to(int n, int m) { return n + (m - n % m) % m; }

}  // namespace

std::vector<SrTile> sr_tiles(int h, int w, int tile, int unshuffle) { return tiles_for(h, w, tile, unshuffle, false); }

SrPlan plan_sr(const RrdbConfig& c, int width, int height, int tile, DType act, const WorkspaceFn& ws) {
  GPEN_CHECK(width >= 1 && height >= 1, "super-resolution: empty image");
  const int m = c.unshuffle();
  SrPlan p;
  p.padded_h = pad_to(height, m);
  p.padded_w = pad_to(width, m);
  p.tile = tile >= std::max(p.padded_h, p.padded_w) ? 0 : std::max(tile, 0);
  const std::vector<SrTile> tiles = sr_tiles(p.padded_h, p.padded_w, p.tile, m);
  p.tiles_y = p.tile ? (p.padded_h + p.tile - 1) / p.tile : 1;
  p.tiles_x = p.tile ? (p.padded_w + p.tile - 1) / p.tile : 1;
  std::vector<std::pair<std::pair<int, int>, int>> count;  // shape -> tiles of that shape
  for (const SrTile& t : tiles) {
    p.extended_cuts += t.extended;
    const std::pair<int, int> s{t.cy1 - t.cy0, t.cx1 - t.cx0};
    auto it = std::find_if(count.begin(), count.end(), [&](const auto& e) { return e.first == s; });
    if (it == count.end()) count.push_back({s, 1});
    else ++it->second;
  }
  for (const auto& [s, n] : count) {
    RrdbGraph rg = build_rrdbnet_graph(c, s.first, s.second, act);
    const MemoryPlan mp = plan_memory(rg.graph, ws);
    p.cut_shapes.push_back(s);
    p.arena_bytes = std::max(p.arena_bytes, mp.arena_bytes);
    p.workspace_bytes = std::max(p.workspace_bytes, mp.workspace_bytes);
    p.lower_bound_bytes = std::max(p.lower_bound_bytes, mp.lower_bound_bytes);
    p.weights_bytes = mp.weights_bytes;
    p.flops += graph_flops(rg.graph) * n;
  }
  return p;
}

int choose_sr_tile(const RrdbConfig& c, int width, int height, size_t budget, DType act, const WorkspaceFn& ws,
                   std::string* why) {
  auto mib = [](size_t b) { return std::to_string((b + (1 << 19)) >> 20) + " MiB"; };
  const SrPlan whole = plan_sr(c, width, height, 0, act, ws);
  if (budget == 0 || whole.total_bytes() <= budget) {
    if (why)
      *why = "untiled: the whole photo's plan (" + mib(whole.total_bytes()) + ") fits the budget" +
             (budget ? " of " + mib(budget) : std::string(" (no limit)"));
    return 0;
  }
  // The plan grows with the tile: binary search on multiples of 8, scored by the largest cut (an
  // interior one, T + 20 square or the whole axis), then checked with every cut shape.
  const int m = c.unshuffle();
  const int longest = std::max(pad_to(height, m), pad_to(width, m));
  auto fits = [&](int t) { return plan_sr(c, width, height, t, act, ws).total_bytes() <= budget; };
  int lo = 0, hi = (longest + 7) / 8;  // in units of 8: lo fits (0 = none found), hi does not
  if (!fits(16)) {
    throw Error("super-resolution: even 16-pixel tiles need " + mib(plan_sr(c, width, height, 16, act, ws).total_bytes()) +
                ", more than the memory budget of " + mib(budget));
  }
  lo = 2;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (fits(mid * 8) ? lo : hi) = mid;
  }
  const int t = lo * 8;
  const SrPlan p = plan_sr(c, width, height, t, act, ws);
  if (why)
    *why = "tiled: the whole photo needs " + mib(whole.total_bytes()) + ", more than the budget of " + mib(budget) +
           "; " + std::to_string(t) + " is the largest tile (multiple of 8) whose plan fits (" + mib(p.total_bytes()) +
           ", " + std::to_string(p.tiles_x * p.tiles_y) + " tiles)";
  return t;
}

Image super_resolve(RrdbModel& model, ImageView img, const SrOptions& opt, SrReport* report) {
  GPEN_CHECK(img.width > 0 && img.height > 0 && img.bgr.size() == img.pixels() * 3,
             "super-resolution: empty or malformed image");
  const auto t0 = std::chrono::steady_clock::now();
  const RrdbConfig& c = model.config();
  GPEN_CHECK(c.num_in_ch == 3 && c.num_out_ch == 3, "super-resolution needs an RGB model (3 channels in and out)");
  const int s = c.scale, m = c.unshuffle();
  const int H = img.height, W = img.width;
  const int h = pad_to(H, m), w = pad_to(W, m);
  const int hp = h - H, wp = w - W;
  // Official crop: s*(H + h_pad) - h_pad rows (2H + 1 for an odd H at x2); ours s*H.
  const int out_h = opt.official ? s * h - hp : s * H, out_w = opt.official ? s * w - wp : s * W;
  const int tile = opt.tile >= std::max(h, w) ? 0 : std::max(opt.tile, 0);
  GPEN_CHECK(opt.tile_pad >= 0, "super-resolution: the tile pad must not be negative");
  const std::vector<SrTile> tiles = tiles_for(h, w, tile, m, opt.official, opt.tile_pad);
  std::vector<std::pair<int, int>> shapes;
  for (const SrTile& t : tiles) {
    if (opt.official)
      GPEN_CHECK((t.cy1 - t.cy0) % m == 0 && (t.cx1 - t.cx0) % m == 0,
                 "sr failed: the official tile_process cuts a " + std::to_string(t.cx1 - t.cx0) + "x" +
                     std::to_string(t.cy1 - t.cy0) + " tile, not a multiple of " + std::to_string(m));
    const std::pair<int, int> sh{t.cy1 - t.cy0, t.cx1 - t.cx0};
    if (std::find(shapes.begin(), shapes.end(), sh) == shapes.end()) shapes.push_back(sh);
  }
  model.reserve(shapes);  // one arena and workspace for every cut shape, planned before any run

  // Reflect padding (row H-1+k = row H-1-k); an image shorter than the pad (H = 1 at x2) repeats
  // its edge where PyTorch's reflect would refuse.
  auto reflect = [](int i, int n) { return i < n ? i : std::max(0, 2 * (n - 1) - i); };
  Image out;
  out.width = out_w;
  out.height = out_h;
  out.bgr.assign(static_cast<size_t>(out_w) * out_h * 3, 0);
  std::vector<float> in, res;
  double flops = 0;
  int extended = 0;
  for (size_t k = 0; k < tiles.size(); ++k) {
    const SrTile& t = tiles[k];
    extended += t.extended;
    const int ch = t.cy1 - t.cy0, cw = t.cx1 - t.cx0;
    in.resize(static_cast<size_t>(ch) * cw * 3);
    for (int y = 0; y < ch; ++y) {
      const uint8_t* row = img.bgr.data() + static_cast<size_t>(reflect(t.cy0 + y, H)) * W * 3;
      float* d = in.data() + static_cast<size_t>(y) * cw * 3;
      for (int x = 0; x < cw; ++x) {
        const uint8_t* p = row + static_cast<size_t>(reflect(t.cx0 + x, W)) * 3;
        for (int cc = 0; cc < 3; ++cc) d[x * 3 + cc] = static_cast<float>(p[2 - cc]) / 255.0f;  // BGR -> RGB
      }
    }
    res.resize(static_cast<size_t>(ch) * s * cw * s * 3);
    model.run(in.data(), ch, cw, res.data());
    if (const Graph* g = model.last_graph()) flops += graph_flops(*g);
    // The core of the cut, clamped, to BGR, rounded half to even (np.round of float32 * 255).
    const int oy0 = s * (t.y0 - t.cy0), ox0 = s * (t.x0 - t.cx0);
    const int rows = std::min(s * t.y1, out_h) - s * t.y0, cols = std::min(s * t.x1, out_w) - s * t.x0;
    for (int y = 0; y < rows; ++y) {
      const float* src = res.data() + (static_cast<size_t>(oy0 + y) * cw * s + ox0) * 3;
      uint8_t* dst = out.bgr.data() + (static_cast<size_t>(s * t.y0 + y) * out_w + s * t.x0) * 3;
      for (int x = 0; x < cols; ++x)
        for (int cc = 0; cc < 3; ++cc) {
          const float v = std::min(std::max(src[x * 3 + 2 - cc], 0.0f), 1.0f) * 255.0f;
          dst[x * 3 + cc] = static_cast<uint8_t>(std::nearbyint(v));
        }
    }
    if (opt.progress && tiles.size() > 1) opt.progress(static_cast<int>(k + 1), static_cast<int>(tiles.size()));
  }
  if (report) {
    report->tile = tile;
    report->tiles = static_cast<int>(tiles.size());
    report->in_w = W;
    report->in_h = H;
    report->out_w = out_w;
    report->out_h = out_h;
    report->flops = flops;
    report->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    report->corrections.clear();
    if (!opt.official && s == 2 && (hp || wp))
      report->corrections.push_back(
          "output cropped to exactly " + std::to_string(s * W) + "x" + std::to_string(s * H) +
          " (the official crop keeps s*(H+pad)-pad = " + std::to_string(s * w - wp) + "x" + std::to_string(s * h - hp) +
          ": one upscaled padding row/column too many)");
    if (extended)
      report->corrections.push_back(
          std::to_string(extended) + " of " + std::to_string(tiles.size()) + " tile cuts widened by up to " +
          std::to_string(m - 1) + " image pixels to a multiple of " + std::to_string(m) +
          " (the official tile_process fails there: 'sr failed', and the photo goes on without SR)");
    if ((hp && H < 2) || (wp && W < 2))
      report->corrections.push_back("a 1-pixel side was padded by repetition (PyTorch's reflect padding refuses it)");
  }
  return out;
}

std::unique_ptr<RrdbModel> open_sr_model(const std::string& path, Backend& backend, const std::string& precision) {
  const std::optional<DType> p = parse_precision_flag(precision);
  GPEN_CHECK(!p || *p == DType::f32 || is_device_backend(backend),
             "--precision " + precision + ": the CPU backend runs fp32 only (use --device cuda)");
  return RrdbModel::open(path, backend, p);
}

int resolve_sr_tile(const SrSettings& s, RrdbModel& model, int width, int height, std::string* why) {
  if (s.tile != "auto") {
    size_t used = 0;
    int t = -1;
    try {
      t = std::stoi(s.tile, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    GPEN_CHECK(used == s.tile.size() && t >= 0 && t <= 65536,
               "--sr-tile " + s.tile + ": expected auto, 0 (untiled) or a tile size in pixels");
    if (why) *why = t == 0 ? "untiled, as asked (--sr-tile 0)" : "tile " + std::to_string(t) + ", as asked (--sr-tile)";
    return t;
  }
  Backend& b = model.backend();
  WorkspaceFn ws = [&b](const Graph& g, const Node& n) { return b.workspace_bytes(g, n); };
  return choose_sr_tile(model.config(), width, height, s.budget, model.precision(), ws, why);
}

}  // namespace gpen
