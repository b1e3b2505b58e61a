// Banded execution end to end at the released GPEN-BFR-256 and -512 shapes (full channel counts,
// synthetic weights) on the CPU in fp32: banded output == unbanded output bit for bit. The small
// models of tests/test_banding.cpp have 16 channels, which the CPU conv runs on its direct path;
// these widths take the GEMM paths the real models use. Slow (seconds of CPU per run). Recomputed
// and carried halos (engine/plan/banding_carry.h) both.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "engine/models/gpen_model.h"
#include "kernels/cpu/ops.h"

using namespace gpen;

namespace {

// The bands of a banded graph run the direct conv (Winograd's tiles span rows: kernels/cpu/
// winograd.cpp), so the unbanded reference must too. The CPU reads GPEN_CPU_CONV once, at its first
// conv: set before main.
const bool kDirectConvs = [] { return setenv("GPEN_CPU_CONV", "direct", 1) == 0; }();

void check_banded(const GpenConfig& c, const BandingSpec& spec) {
  auto be = make_cpu_backend();
  auto m = GpenModel::synthetic(c, *be, 2);
  std::mt19937 rng(c.size);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> in(size_t(c.size) * c.size * 3), a(in.size()), b(in.size());
  for (auto& v : in) v = u(rng);
  REQUIRE(kDirectConvs);
  m->prepare(1);
  m->run(in.data(), a.data());
  PlanOptions o;
  o.band_spec = spec;
  m->prepare(1, o);
  REQUIRE(m->transform_report().banding.applied);
  CHECK(m->plan().arena_bytes < m->transform_report().banding.lower_bound_before);
  m->run(in.data(), b.data());
  size_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  CHECK(differ == 0);
}

}  // namespace

TEST_CASE("banding e2e: GPEN-BFR-256 shapes, odd band heights, bit-identical in fp32") {
  GpenConfig c;
  c.size = 256;
  c.channel_multiplier = 1;
  c.narrow = 0.5;
  BandingSpec s;
  s.band_res = 32;
  s.keep_res = 64;
  s.boundaries = {0, 37, 101, 102, 200, 256};
  check_banded(c, s);
}

TEST_CASE("banding e2e: GPEN-BFR-512 shapes, bit-identical in fp32") {
  GpenConfig c;  // size 512, channel multiplier 2
  BandingSpec s;
  s.band_res = 128;
  s.keep_res = 128;
  s.boundaries = {0, 75, 150, 299, 512};
  check_banded(c, s);
}

TEST_CASE("banding e2e: carried halos at GPEN-BFR-256 shapes, odd band heights, bit-identical in fp32") {
  GpenConfig c;
  c.size = 256;
  c.channel_multiplier = 1;
  c.narrow = 0.5;
  BandingSpec s;
  s.band_res = 16;
  s.keep_res = 32;
  s.boundaries = {0, 1, 37, 38, 101, 150, 203, 255, 256};
  s.carry = true;
  check_banded(c, s);
}

TEST_CASE("banding e2e: carried halos at GPEN-BFR-512 shapes, bit-identical in fp32") {
  GpenConfig c;  // size 512, channel multiplier 2
  BandingSpec s;
  s.band_res = 64;
  s.keep_res = 128;
  s.bands = 13;  // 39- and 40-row bands
  s.carry = true;
  s.stage_rows = 16;
  check_banded(c, s);
}

TEST_CASE("banding e2e: the 24 MiB pick at GPEN-BFR-512 shapes (64 carried bands from 16), bit-identical in fp32") {
  // What `gpen plan --size 512 --precision fp16 --arena-budget 24MiB` picks since the transposed
  // modconv's row crop (docs/memory.md): 8-row output bands, a transposed conv band of 1-2 rows at
  // 32, carried halos on every stage, the features above 128 recomputed.
  GpenConfig c;  // size 512, channel multiplier 2
  BandingSpec s;
  s.band_res = 16;
  s.keep_res = 128;
  s.bands = 64;
  s.carry = true;
  check_banded(c, s);
}
