// FullGenerator_SR on the engine against the PyTorch re-creation of the official class
// (tests/reference/make_gpen_tasks_fixtures.py): exact (to float rounding) when the noise weights
// above in_size are 0; with non-zero weights, exact given the engine's own seeded noise (the
// fixture ports its generator), reproducible per seed and independent of the batch.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "converter/convert.h"
#include "engine/models/gpen_model.h"
#include "engine/models/gpen_noise.h"
#include "engine/photo/npy.h"
#include "kernels/cpu/ops.h"
#include "test_paths.h"

using namespace gpen;
namespace fs = std::filesystem;

namespace {

const std::string kDir = gpen_test::fixture_dir() + "/gpen_tasks/";

std::unique_ptr<GpenModel> load(const std::string& name, Backend& be) {
  std::string gpw = (gpen_test::scratch_path("tasks_sr_" + name + ".gpw")).string();
  conv::convert(kDir + name + ".pth", gpw);
  auto m = GpenModel::open(gpw, be);
  fs::remove(gpw);
  return m;
}

std::vector<float> nchw_to_nhwc(const npy::Array& a) {
  const int64_t N = a.shape[0], C = a.shape[1], P = a.shape[2] * a.shape[3];
  std::vector<float> r(a.numel());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < P; ++p)
      for (int64_t c = 0; c < C; ++c) r[(n * P + p) * C + c] = a.data<float>()[(n * C + c) * P + p];
  return r;
}

struct Diff {
  double max = 0, mean = 0;
};
Diff diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  Diff d;
  for (size_t i = 0; i < a.size(); ++i) {
    double v = std::fabs(double(a[i]) - b[i]);
    d.max = std::max(d.max, v);
    d.mean += v;
  }
  d.mean /= double(a.size());
  return d;
}

std::vector<float> run(GpenModel& m, const std::vector<float>& x, int batch) {
  const int O = m.output_size(), S = m.size();
  const int n = static_cast<int>(x.size() / (size_t(S) * S * 3));
  m.prepare(batch);
  std::vector<float> y(size_t(n) * O * O * 3);
  const size_t fi = size_t(S) * S * 3, fo = size_t(O) * O * 3;
  for (int s = 0; s < n; s += batch) {
    int k = std::min(batch, n - s);
    m.run(k, x.data() + s * fi, y.data() + s * fo);
  }
  return y;
}

}  // namespace

TEST_CASE("FullGenerator_SR graph: noise inputs above in_size, shapes of out_size") {
  GpenConfig c;
  c.size = 32;
  c.out_size = 128;
  c.channel_multiplier = 1;
  c.narrow = 1.0 / 64;
  c.style_dim = 16;
  c.batch = 3;
  GpenGraph g = build_gpen_graph(c);
  REQUIRE(g.noise.size() == 4);  // two StyledConvs at 64 and two at 128
  const int res[] = {64, 64, 128, 128};
  for (int i = 0; i < 4; ++i) {
    const Shape& s = g.graph.tensor(g.noise[i]).shape;
    CHECK(s == Shape{3, res[i], res[i], gpen_channels(c, res[i])});
  }
  CHECK(g.graph.tensor(g.input).shape == Shape{3, 32, 32, 3});
  CHECK(g.graph.tensor(g.output).shape == Shape{3, 128, 128, 3});
  c.out_size = 0;
  CHECK(build_gpen_graph(c).noise.empty());
  c.out_size = 16;
  CHECK_THROWS_WITH_AS(build_gpen_graph(c), doctest::Contains("out_size"), Error);
}

TEST_CASE("FullGenerator_SR with zero noise weights matches the PyTorch re-creation") {
  cpu::set_num_threads(2);
  auto be = make_cpu_backend();
  auto m = load("sr_zero", *be);
  CHECK(m->size() == 32);
  CHECK(m->output_size() == 64);
  const auto x = nchw_to_nhwc(npy::load(kDir + "sr_input.npy"));
  const auto want = nchw_to_nhwc(npy::load(kDir + "sr_zero_out.npy"));
  // Whatever the seed: with zero weights the noise cannot reach the output.
  for (uint64_t seed : {0ull, 1ull, 123456789ull}) {
    m->set_noise_seed(seed);
    Diff d = diff(run(*m, x, 2), want);
    MESSAGE("seed ", seed, ": max |engine - reference| ", d.max, ", mean ", d.mean);
    // The GPEN e2e tolerances (tests/test_gpen_e2e.cpp): float32 rounding only.
    CHECK(d.max <= 1e-3);
    CHECK(d.mean <= 1e-4);
  }
}

TEST_CASE("FullGenerator_SR with noise: the engine's seeded stream, reproducible, batch-independent") {
  cpu::set_num_threads(2);
  auto be = make_cpu_backend();
  auto m = load("sr_noise", *be);
  const auto x = nchw_to_nhwc(npy::load(kDir + "sr_input.npy"));
  // The fixture ran the PyTorch re-creation on the engine's noise (seed 7, faces 0 and 1).
  m->set_noise_seed(7);
  const auto y7 = run(*m, x, 2);
  Diff d = diff(y7, nchw_to_nhwc(npy::load(kDir + "sr_seed7_out.npy")));
  MESSAGE("seed 7: max |engine - reference| ", d.max, ", mean ", d.mean);
  CHECK(d.max <= 1e-3);
  CHECK(d.mean <= 1e-4);
  // Same seed again, and one face per run: bit for bit the same (noise is per face, not per batch).
  m->set_noise_seed(7);
  CHECK(run(*m, x, 1) == y7);
  // The stream advances: the next call draws new noise.
  const auto next = run(*m, x, 2);
  CHECK(next != y7);
  // Another seed: a different output, by as much as two official torch draws differ (fixture
  // info.json: RMS 0.1055 between two draws; the same noise law gives the same spread).
  m->set_noise_seed(8);
  const auto y8 = run(*m, x, 2);
  double ss = 0;
  for (size_t i = 0; i < y8.size(); ++i) ss += double(y8[i] - y7[i]) * (y8[i] - y7[i]);
  const double rms = std::sqrt(ss / double(y8.size()));
  MESSAGE("RMS between seeds 7 and 8: ", rms);
  CHECK(rms > 0.1055 / 1.5);
  CHECK(rms < 0.1055 * 1.5);
}

TEST_CASE("noise generator: N(0, 1) statistics, pure in (seed, face, layer)") {
  const size_t n = 1 << 20;
  std::vector<float> v(n);
  gaussian_noise(3, 0, 0, v.data(), n);
  double s = 0, s2 = 0, s4 = 0;
  size_t tail = 0;
  for (float x : v) {
    s += x;
    s2 += double(x) * x;
    s4 += double(x) * x * x * x;
    tail += std::fabs(x) > 2;
  }
  const double mean = s / n, var = s2 / n - mean * mean, kurt = s4 / n / (var * var);
  MESSAGE("mean ", mean, " var ", var, " kurtosis ", kurt, " P(|x|>2) ", double(tail) / n);
  // 1 M samples: standard errors 0.001 (mean), 0.0014 (var), 0.005 (kurtosis), 0.0002 (tail).
  CHECK(std::fabs(mean) < 0.005);
  CHECK(std::fabs(var - 1) < 0.007);
  CHECK(std::fabs(kurt - 3) < 0.03);
  CHECK(std::fabs(double(tail) / n - 0.0455) < 0.001);
  std::vector<float> a(1001), b(1001), c(1001), d(1001);
  gaussian_noise(3, 0, 0, a.data(), a.size());
  CHECK(std::equal(a.begin(), a.end(), v.begin()));  // a prefix of the same stream
  gaussian_noise(3, 1, 0, b.data(), b.size());
  gaussian_noise(3, 0, 1, c.data(), c.size());
  gaussian_noise(4, 0, 0, d.data(), d.size());
  CHECK(a != b);
  CHECK(a != c);
  CHECK(a != d);
}
