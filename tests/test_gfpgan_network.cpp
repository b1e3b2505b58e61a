// GFPGANv1Clean on the engine against the official network: the random-weight checkpoints of
// tests/reference/make_gfpgan_fixtures.py converted to .gpw, the raw network run on the CPU in
// fp32 on the fixtures' two inputs (a face crop and noise) and compared with the official output
// (randomize_noise=False) and style code. s64: different_w and SFT on half the channels; s32: one
// shared style code and SFT on all of them. Float rounding alone moves the official output by
// ~1e-6 (manifest.json's f64_maxabs_diff); the bound is 1e-4. And `gpen plan --arch gfpgan`.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "converter/checkpoint.h"
#include "converter/convert.h"
#include "engine/core/error.h"
#include "engine/models/gfpgan.h"
#include "engine/photo/npy.h"
#include "engine/runtime/backend.h"
#include "tests/converter_fixtures.h"
#include "tests/run_command.h"
#include "tests/test_paths.h"
#include "weights/gpw.h"

using namespace gpen;
namespace fs = std::filesystem;

namespace {

std::string gfpgan_dir() { return gpen_test::fixture_dir() + "/gfpgan/"; }

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("gpen_test_gfpgan_net_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// The converted files go when the test process ends.
struct RemoveTempDir {
  ~RemoveTempDir() {
    std::error_code ec;
    fs::remove_all(fs::temp_directory_path() / ("gpen_test_gfpgan_net_" + std::to_string(::getpid())), ec);
  }
} remove_temp_dir;

std::string convert_fixture(const std::string& cfg) {
  auto ck = conv::Checkpoint::open(gfpgan_dir() + cfg + "/checkpoint.pth");
  const fs::path out = temp_dir() / (cfg + ".gpw");
  conv::convert(*ck, out.string());
  return out.string();
}

// NCHW (host, from .npy) <-> NHWC.
std::vector<float> nchw_to_nhwc(const float* x, int64_t N, int64_t C, int64_t H, int64_t W) {
  std::vector<float> y(static_cast<size_t>(N * C * H * W));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < H * W; ++i) y[static_cast<size_t>((n * H * W + i) * C + c)] = x[(n * C + c) * H * W + i];
  return y;
}

struct Result {
  double output = 0, style = 0;
};

Result run_fixture(const std::string& cfg) {
  const std::string dir = gfpgan_dir() + cfg + "/";
  const npy::Array in = npy::load(dir + "input.npy");
  const npy::Array want = npy::load(dir + "output.npy");
  const npy::Array want_style = npy::load(dir + "style_code.npy");
  REQUIRE(in.shape.size() == 4);
  const int64_t N = in.shape[0], S = in.shape[2];
  auto backend = make_cpu_backend();
  GfpganModel m(convert_fixture(cfg), *backend);
  REQUIRE(m.config().out_size == S);
  const std::vector<float> x = nchw_to_nhwc(in.data<float>(), N, 3, S, S);
  std::vector<float> y(static_cast<size_t>(N * S * S * 3));
  const int64_t style_width = want_style.numel() / N;
  std::vector<float> style(static_cast<size_t>(want_style.numel()));
  m.run(x.data(), static_cast<int>(N), y.data(), style.data());
  const GfpganNetConfig& c = m.config();
  CHECK(style_width == (c.different_w ? c.num_latent() : 1) * c.num_style_feat);
  Result r;
  const std::vector<float> ref = nchw_to_nhwc(want.data<float>(), N, 3, S, S);
  for (size_t i = 0; i < y.size(); ++i) r.output = std::max(r.output, static_cast<double>(std::abs(y[i] - ref[i])));
  const float* rs = want_style.data<float>();
  for (size_t i = 0; i < style.size(); ++i) r.style = std::max(r.style, static_cast<double>(std::abs(style[i] - rs[i])));
  return r;
}

}  // namespace

TEST_CASE("GFPGANv1Clean s64 (different_w, sft_half) matches the official network on the CPU") {
  const Result r = run_fixture("s64");
  MESSAGE("s64: max abs diff output " << r.output << ", style code " << r.style);
  CHECK(r.style <= 1e-4);
  CHECK(r.output <= 1e-4);
}

TEST_CASE("GFPGANv1Clean s32 (one style code, SFT on all channels) matches the official network on the CPU") {
  const Result r = run_fixture("s32");
  MESSAGE("s32: max abs diff output " << r.output << ", style code " << r.style);
  CHECK(r.style <= 1e-4);
  CHECK(r.output <= 1e-4);
}

TEST_CASE("GFPGAN's memory plan puts every intermediate in one arena, smaller than all of them") {
  auto backend = make_cpu_backend();
  GfpganModel m(convert_fixture("s64"), *backend);
  const MemoryPlan& p = m.plan_for(2);
  CHECK(p.arena_bytes > 0);
  CHECK(p.arena_bytes < p.naive_bytes);
  CHECK(p.inplace_count > 0);  // the StyleConv epilogues and SFTs run in place
}

TEST_CASE("GfpganModel refuses a .gpw of another model and the graph inconsistent configurations") {
  auto backend = make_cpu_backend();
  auto ck = conv::Checkpoint::open(gpen_test::fixture_dir() + "/checkpoints/gpen_s64.zip.pth");
  const fs::path gpw = temp_dir() / "gpen_s64.gpw";
  conv::convert(*ck, gpw.string());
  const std::string e = gpen_test::error_of([&] { GfpganModel m(gpw.string(), *backend); });
  CHECK(e.find("not GFPGAN") != std::string::npos);
  CHECK(e.find(gpw.string()) != std::string::npos);
  GfpganNetConfig c;
  c.out_size = 48;
  CHECK_THROWS_AS(build_gfpgan_graph(c), Error);
  // 3 decoder channels at 4..32 against int(1.5) = 1 in the U-Net: no SFT split fits.
  c.out_size = 8;
  c.narrow = 3.0 / 512;
  CHECK_THROWS_AS(build_gfpgan_graph(c), Error);
  c.sft_half = false;
  CHECK_THROWS_AS(build_gfpgan_graph(c), Error);
}

TEST_CASE("gpen plan --arch gfpgan reports the plan of a size and of a converted model") {
  std::string out;
  const std::string gpen = gpen_test::binary_dir() + "/gpen";
  REQUIRE(gpen_test::run(gpen + " plan --arch gfpgan --size 64 --batch 2 --json", &out) == 0);
  const auto j = nlohmann::json::parse(out);
  CHECK(j["arch"] == "gfpgan");
  CHECK(j["size"] == 64);
  CHECK(j["gflop"].get<double>() > 0);
  CHECK(j["arena_bytes"].get<size_t>() >= j["lower_bound_bytes"].get<size_t>());
  REQUIRE(gpen_test::run(gpen + " plan --arch gfpgan -m " + convert_fixture("s32") + " --json", &out) == 0);
  const auto k = nlohmann::json::parse(out);
  CHECK(k["size"] == 32);
  CHECK(k["arena_bytes"].get<size_t>() > 0);
}
