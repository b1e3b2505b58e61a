// Banded execution with carried halos (engine/plan/banding_carry.h) on the CUDA backend, in the
// emulator (tests/cuda_emu), natively on a GPU with GPEN_CUDA_TESTS_NATIVE: the banded graph gives
// the unbanded graph's output bit for bit in fp16 (and fp32), for fixed and random band
// geometries, batch 1 and 2. The carries are identity bias_act copies on the device.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "engine/models/gpen_model.h"
#include "engine/runtime/cuda/backend_cuda.h"
#include "engine/runtime/device.h"

using namespace gpen;

namespace {

GpenConfig gpen32(DType t) {
  GpenConfig c;
  c.size = 32;
  c.channel_multiplier = 1;
  c.narrow = 1.0 / 32;
  c.style_dim = 16;
  c.act_dtype = t;
  return c;
}

std::vector<float> faces(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(n) * 32 * 32 * 3);
  for (auto& x : v) x = u(rng);
  return v;
}

std::vector<float> run(Backend& be, DType t, int batch, const PlanOptions& o, const std::vector<float>& in) {
  auto m = GpenModel::synthetic(gpen32(t), be, 9);
  m->prepare(batch, o);
  if (o.band_spec.band_res > 0) {
    REQUIRE(m->transform_report().banding.applied);
    REQUIRE(m->transform_report().banding.carried);
  }
  std::vector<float> out(in.size());
  m->run(in.data(), out.data());
  return out;
}

}  // namespace

TEST_CASE("CUDA banding carry: carried halos give the unbanded output bit for bit in fp16 and fp32") {
  DeviceOptions dopt;
  dopt.kind = DeviceKind::cuda;
  auto be = cuda::make_cuda_backend(dopt);
  std::mt19937 rng(1819);
  struct Case {
    DType t;
    int batch, R, keep;
    std::vector<int64_t> bounds;
  };
  std::vector<Case> cases = {
      {DType::f16, 1, 8, 8, {0, 9, 14, 15, 32}},  // odd heights, a one-row band
      {DType::f16, 1, 8, 32, {0, 1, 2, 3, 17, 31, 32}},
      {DType::f32, 1, 8, 16, {0, 5, 32}},
  };
  // A random geometry (seeded), batch 2.
  std::vector<int64_t> cuts{0, 32};
  for (int k = 0; k < 5; ++k) cuts.push_back(1 + static_cast<int64_t>(rng() % 31));
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  cases.push_back({DType::f16, 2, 16, 16, cuts});
  for (const Case& c : cases) {
    const std::string name = dtype_name(c.t);
    CAPTURE(name);
    CAPTURE(c.batch);
    CAPTURE(c.R);
    CAPTURE(c.keep);
    CAPTURE(c.bounds.size());
    const std::vector<float> in = faces(c.batch, 50 + c.batch);
    const std::vector<float> ref = run(*be, c.t, c.batch, {}, in);
    PlanOptions o;
    o.band_spec.band_res = c.R;
    o.band_spec.keep_res = c.keep;
    o.band_spec.boundaries = c.bounds;
    o.band_spec.carry = true;
    const std::vector<float> out = run(*be, c.t, c.batch, o, in);
    size_t differ = 0;
    for (size_t i = 0; i < out.size(); ++i) differ += std::memcmp(&out[i], &ref[i], sizeof(float)) != 0;
    CHECK(differ == 0);
  }
}
