// The tiling of RealESRNet (engine/photo/super_resolution): the official tile_process partition
// (cores, cuts with tile_pad 10, row-major), the engine's widening of cuts that the official code
// cannot run, and the memory target of issue 15 on fp32 CPU plans: RealESRNet x2 on 1920x1080 and
// x4 on 4000x3000 within 2 GiB with the tile `auto` picks (plan only, nothing runs at that size).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/models/rrdbnet.h"
#include "engine/photo/super_resolution.h"
#include "engine/runtime/backend.h"

using namespace gpen;

TEST_CASE("sr_tiles follows the official tile_process partition") {
  // x2 (factor 2), padded 64 x 48, tile 24: 3 x 2 tiles, row-major.
  const std::vector<SrTile> t = sr_tiles(64, 48, 24, 2);
  REQUIRE(t.size() == 6);
  CHECK(t[0].y0 == 0);
  CHECK(t[0].y1 == 24);
  CHECK(t[0].x1 == 24);
  CHECK(t[1].x0 == 24);
  CHECK(t[1].x1 == 48);
  CHECK(t[2].y0 == 24);
  // Cuts: [max(y0 - 10, 0), min(y1 + 10, h)).
  CHECK(t[0].cy0 == 0);
  CHECK(t[0].cy1 == 34);
  CHECK(t[2].cy0 == 14);
  CHECK(t[2].cy1 == 58);
  CHECK(t[4].y0 == 48);
  CHECK(t[4].y1 == 64);
  CHECK(t[4].cy0 == 38);
  CHECK(t[4].cy1 == 64);
  CHECK(t[1].cx0 == 14);
  CHECK(t[1].cx1 == 48);
  for (const SrTile& s : t) CHECK_FALSE(s.extended);  // all even: the official code runs these
  // Untiled: one tile, the whole input.
  const std::vector<SrTile> u = sr_tiles(64, 48, 0, 2);
  REQUIRE(u.size() == 1);
  CHECK(u[0].cy1 == 64);
  CHECK(u[0].cx1 == 48);
}

TEST_CASE("cuts the official code cannot run are widened to the unshuffle multiple") {
  // x1 (factor 4), 64 wide, tile 24: the official cuts are 34, 44 and 26 wide (34 and 26 fail).
  const std::vector<SrTile> t = sr_tiles(4, 64, 24, 4);
  REQUIRE(t.size() == 3);
  CHECK(t[0].cx0 == 0);
  CHECK(t[0].cx1 == 36);  // two more pixels after the end
  CHECK(t[0].extended);
  CHECK(t[1].cx0 == 14);
  CHECK(t[1].cx1 == 58);
  CHECK_FALSE(t[1].extended);
  CHECK(t[2].cx0 == 36);  // at the far border: two more before the start
  CHECK(t[2].cx1 == 64);
  CHECK(t[2].extended);
  for (const SrTile& s : t) {
    CHECK((s.cx1 - s.cx0) % 4 == 0);
    // The core stays inside its cut with at least the official context.
    CHECK(s.cx0 <= std::max(s.x0 - kSrTilePad, 0));
    CHECK(s.cx1 >= std::min(s.x1 + kSrTilePad, 64));
  }
  // x2 with an odd tile (13) on 50: every cut even after widening.
  for (const SrTile& s : sr_tiles(50, 50, 13, 2)) {
    CHECK((s.cy1 - s.cy0) % 2 == 0);
    CHECK((s.cx1 - s.cx0) % 2 == 0);
  }
}

TEST_CASE("fp32 CPU plans of the memory target fit 2 GiB with the tile auto picks") {
  auto cpu = make_cpu_backend();
  const WorkspaceFn ws = [&](const Graph& g, const Node& n) { return cpu->workspace_bytes(g, n); };
  const size_t budget = size_t{2} << 30;
  struct Target {
    int scale, w, h;
  };
  for (const Target& t : {Target{2, 1920, 1080}, Target{4, 4000, 3000}}) {
    CAPTURE(t.scale);
    RrdbConfig c;
    c.scale = t.scale;
    std::string why;
    const int tile = choose_sr_tile(c, t.w, t.h, budget, DType::f32, ws, &why);
    const SrPlan p = plan_sr(c, t.w, t.h, tile, DType::f32, ws);
    MESSAGE("x" << t.scale << " " << t.w << "x" << t.h << " fp32 cpu: " << why << "; arena " << p.arena_bytes
                << ", workspace " << p.workspace_bytes << ", weights " << p.weights_bytes);
    CHECK(tile > 0);
    CHECK(p.total_bytes() <= budget);
    CHECK(plan_sr(c, t.w, t.h, tile + 8, DType::f32, ws).total_bytes() > budget);
    // The whole photo would not fit: that is why it tiles.
    CHECK(plan_sr(c, t.w, t.h, 0, DType::f32, ws).total_bytes() > budget);
    // Cost: 1.24 MFLOP per output pixel (gpen-semantics.md) plus the tiles' overlap.
    const double per_out = p.flops / (double(t.w) * t.h * t.scale * t.scale);
    CHECK(per_out > 1.2e6);
    CHECK(per_out < 2.5e6);
  }
  // A small photo runs untiled when it fits.
  RrdbConfig c;
  std::string why;
  CHECK(choose_sr_tile(c, 64, 48, budget, DType::f32, ws, &why) == 0);
  CHECK(why.find("untiled") != std::string::npos);
}
