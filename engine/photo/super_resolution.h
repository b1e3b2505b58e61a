#pragma once
// Background super-resolution: the official RealESRNet.process (gpen-semantics.md, "Background
// super-resolution") on a BGR photo, untiled or tiled as the official tile_process, with the
// tile chosen from the memory plan. Two defects of the official code are corrected, and every
// correction is named in SrReport::corrections:
//  - the crop keeps exactly s*H x s*W (the official one leaves s*(H + h_pad) - h_pad rows, i.e.
//    2H + 1 for an odd H at x2; columns likewise);
//  - a tile cut whose size is not a multiple of the unshuffle factor (x1: 3+ tiles per axis or
//    T % 4 != 2 with 2 tiles; x2: an odd tile) is extended by up to f - 1 pixels of the image
//    (at its far end, or at its start where it touches the far border), so it runs instead of
//    the official `sr failed` that silently returns the photo without SR. The extra pixels only
//    widen the context; the core written to the output is the official one.
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/image.h"
#include "engine/models/rrdbnet.h"

namespace gpen {

constexpr int kSrTilePad = 10;  // the official tile_pad (GPEN's, and RealESRGANer's in inference_gfpgan.py)

// One tile of tile_process on the padded h x w input: core [y0, y1) x [x0, x1), cut (the input
// the network sees) [cy0, cy1) x [cx0, cx1).
struct SrTile {
  int y0, y1, x0, x1;
  int cy0, cy1, cx0, cx1;
  bool extended = false;  // the cut was widened to the unshuffle multiple (official: sr failed)
};

// The tiles of tile_process for tile size T on a padded h x w input (row-major), with the cut
// extension above. T <= 0: one tile covering everything (untiled).
std::vector<SrTile> sr_tiles(int h, int w, int tile, int unshuffle);

// What a tile size costs: the distinct cut shapes, and the plan covering them all (one arena and
// workspace, the largest of the shapes' plans: docs/memory.md "Background super-resolution").
struct SrPlan {
  int tile = 0;  // 0: untiled
  int tiles_x = 1, tiles_y = 1;
  int padded_h = 0, padded_w = 0;
  std::vector<std::pair<int, int>> cut_shapes;  // (h, w)
  size_t arena_bytes = 0, workspace_bytes = 0, weights_bytes = 0, lower_bound_bytes = 0;
  double flops = 0;  // all tiles together
  int extended_cuts = 0;
  size_t total_bytes() const { return arena_bytes + workspace_bytes + weights_bytes; }
};
SrPlan plan_sr(const RrdbConfig& c, int width, int height, int tile, DType act, const WorkspaceFn& ws);

// The tile `--sr-tile auto` runs: 0 (untiled) when the whole photo's plan fits `budget_bytes`
// (0: no limit), else the largest tile (a multiple of 8 down to 16) whose plan fits. `why` gets
// the reason in words. gpen::Error when not even the smallest tile fits.
int choose_sr_tile(const RrdbConfig& c, int width, int height, size_t budget_bytes, DType act, const WorkspaceFn& ws,
                   std::string* why);

struct SrOptions {
  int tile = 0;  // 0: untiled; > 0: tile_process with this tile size
  int tile_pad = kSrTilePad;  // the context around each tile (inference_codeformer.py's RealESRGANer: 40)
  // Reproduce the official results where they differ (the 2H+1 crop; failing cuts then throw
  // instead of being extended): for the tests that show the difference.
  bool official = false;
  // Called after every tile (done, total) when there are several.
  std::function<void(int, int)> progress;
};

struct SrReport {
  int tile = 0, tiles = 1;
  int in_w = 0, in_h = 0, out_w = 0, out_h = 0;
  double seconds = 0, flops = 0;
  std::vector<std::string> corrections;  // what differs from the official code, in words
};

// RealESRNet.process on a BGR photo: s*H x s*W BGR (with `official`, the official crop).
Image super_resolve(RrdbModel& model, ImageView bgr, const SrOptions& opt, SrReport* report = nullptr);

// The model on `backend` at `precision` ("" = fp32 on the CPU, fp16 on a device).
std::unique_ptr<RrdbModel> open_sr_model(const std::string& path, Backend& backend, const std::string& precision);

// How the tile is chosen: as given (`--sr-tile N`, 0 untiled), or `auto` from a memory budget.
struct SrSettings {
  std::string tile = "auto";  // "auto", or a tile size in pixels (0: untiled)
  size_t budget = 0;          // weights + arena + workspace; 0: no limit
};
// The tile for a width x height photo and the reason, in words (why may be null).
int resolve_sr_tile(const SrSettings& s, RrdbModel& model, int width, int height, std::string* why);

}  // namespace gpen
