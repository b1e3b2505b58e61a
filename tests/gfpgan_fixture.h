#pragma once
// What the GFPGAN network tests share: the random-weight checkpoints of
// tests/reference/make_gfpgan_fixtures.py converted to .gpw in a per-process temporary folder,
// and one run of GfpganModel on a backend on a fixture's inputs, compared with the official output
// (randomize_noise=False) and style code.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "converter/checkpoint.h"
#include "converter/convert.h"
#include "engine/models/gfpgan.h"
#include "engine/photo/npy.h"
#include "engine/runtime/backend.h"
#include "tests/test_paths.h"

namespace gpen_test {

inline std::string gfpgan_dir() { return fixture_dir() + "/gfpgan/"; }

inline std::filesystem::path gfpgan_temp_dir() {
  namespace fs = std::filesystem;
  fs::path d = fs::temp_directory_path() / ("gpen_test_gfpgan_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// The converted files go when the test process ends.
struct RemoveGfpganTempDir {
  ~RemoveGfpganTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(
        std::filesystem::temp_directory_path() / ("gpen_test_gfpgan_" + std::to_string(::getpid())), ec);
  }
};
inline RemoveGfpganTempDir remove_gfpgan_temp_dir;

// Fixture `cfg` (s64, s32) converted to .gpw; its path.
inline std::string convert_gfpgan_fixture(const std::string& cfg) {
  auto ck = gpen::conv::Checkpoint::open(gfpgan_dir() + cfg + "/checkpoint.pth");
  const std::filesystem::path out = gfpgan_temp_dir() / (cfg + ".gpw");
  gpen::conv::convert(*ck, out.string());
  return out.string();
}

// NCHW (host, from .npy) -> NHWC.
inline std::vector<float> nchw_to_nhwc(const float* x, int64_t N, int64_t C, int64_t H, int64_t W) {
  std::vector<float> y(static_cast<size_t>(N * C * H * W));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < H * W; ++i) y[static_cast<size_t>((n * H * W + i) * C + c)] = x[(n * C + c) * H * W + i];
  return y;
}

// Max abs differences of one run against the official network.
struct GfpganFixtureDiff {
  double output = 0, style = 0;
};

// GfpganModel on `backend` on fixture `cfg`'s inputs (both faces in one batch).
inline GfpganFixtureDiff run_gfpgan_fixture(const std::string& cfg, gpen::Backend& backend) {
  using namespace gpen;
  const std::string dir = gfpgan_dir() + cfg + "/";
  const npy::Array in = npy::load(dir + "input.npy");
  const npy::Array want = npy::load(dir + "output.npy");
  const npy::Array want_style = npy::load(dir + "style_code.npy");
  REQUIRE(in.shape.size() == 4);
  const int64_t N = in.shape[0], S = in.shape[2];
  GfpganModel m(convert_gfpgan_fixture(cfg), backend);
  REQUIRE(m.config().out_size == S);
  const std::vector<float> x = nchw_to_nhwc(in.data<float>(), N, 3, S, S);
  std::vector<float> y(static_cast<size_t>(N * S * S * 3));
  const int64_t style_width = want_style.numel() / N;
  std::vector<float> style(static_cast<size_t>(want_style.numel()));
  m.run(x.data(), static_cast<int>(N), y.data(), style.data());
  const GfpganNetConfig& c = m.config();
  CHECK(style_width == (c.different_w ? c.num_latent() : 1) * c.num_style_feat);
  GfpganFixtureDiff r;
  const std::vector<float> ref = nchw_to_nhwc(want.data<float>(), N, 3, S, S);
  size_t not_finite = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    not_finite += !std::isfinite(y[i]);
    r.output = std::max(r.output, static_cast<double>(std::abs(y[i] - ref[i])));
  }
  CHECK(not_finite == 0);
  const float* rs = want_style.data<float>();
  for (size_t i = 0; i < style.size(); ++i) r.style = std::max(r.style, static_cast<double>(std::abs(style[i] - rs[i])));
  return r;
}

}  // namespace gpen_test
