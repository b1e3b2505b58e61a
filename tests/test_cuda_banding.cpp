// Banded execution on the CUDA backend (engine/plan/banding.h), in the emulator (tests/cuda_emu),
// natively on a GPU with GPEN_CUDA_TESTS_NATIVE: the banded graph gives the unbanded graph's
// output bit for bit in fp16 (and fp32), for fixed and random band geometries, batch 1 and 2.
// The split-K decision of the deep convs depends on a call's output pixels, but it is made only
// for the 4x4-32x32 layers with few pixels, which run in the global part here (bands start at
// 16 or above with the 64-pixel model): the banded ops see the same reduction order.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <vector>

#include "engine/models/gpen_model.h"
#include "engine/runtime/cuda/backend_cuda.h"
#include "engine/runtime/device.h"

using namespace gpen;

namespace {

GpenConfig gpen64(DType t) {
  GpenConfig c;
  c.size = 64;
  c.channel_multiplier = 1;
  c.narrow = 1.0 / 32;
  c.style_dim = 16;
  c.act_dtype = t;
  return c;
}

std::vector<float> faces(int n, int size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(n) * size * size * 3);
  for (auto& x : v) x = u(rng);
  return v;
}

std::vector<float> run(Backend& be, DType t, int batch, const PlanOptions& o, const std::vector<float>& in) {
  auto m = GpenModel::synthetic(gpen64(t), be, 9);
  m->prepare(batch, o);
  if (o.band_spec.band_res > 0) REQUIRE(m->transform_report().banding.applied);
  std::vector<float> out(in.size());
  m->run(in.data(), out.data());
  return out;
}

std::unique_ptr<Backend> cuda_backend() {
  DeviceOptions o;
  o.kind = DeviceKind::cuda;
  return cuda::make_cuda_backend(o);
}

}  // namespace

TEST_CASE("CUDA banding: banded GPEN equals unbanded bit for bit in fp16 and fp32") {
  auto be = cuda_backend();
  std::mt19937 rng(18);
  struct Case {
    DType t;
    int batch, R, keep;
    std::vector<int64_t> bounds;
  };
  std::vector<Case> cases = {
      {DType::f16, 1, 16, 16, {0, 9, 30, 31, 64}},  // odd heights, a one-row band
      {DType::f16, 1, 32, 64, {0, 32, 64}},
      {DType::f32, 1, 16, 32, {0, 5, 64}},
  };
  // Random geometries (seeded), batch 2 among them.
  for (int i = 0; i < 2; ++i) {
    std::vector<int64_t> cuts{0, 64};
    for (int k = 0; k < 4; ++k) cuts.push_back(1 + static_cast<int64_t>(rng() % 63));
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    cases.push_back({DType::f16, 1 + i, i ? 32 : 16, 32, cuts});
  }
  for (const Case& c : cases) {
    const std::string name = dtype_name(c.t);
    CAPTURE(name);
    CAPTURE(c.batch);
    CAPTURE(c.R);
    CAPTURE(c.keep);
    CAPTURE(c.bounds.size());
    const std::vector<float> in = faces(c.batch, 64, 40 + c.batch);
    const std::vector<float> ref = run(*be, c.t, c.batch, {}, in);
    PlanOptions o;
    o.band_spec.band_res = c.R;
    o.band_spec.keep_res = c.keep;
    o.band_spec.boundaries = c.bounds;
    const std::vector<float> out = run(*be, c.t, c.batch, o, in);
    size_t differ = 0;
    for (size_t i = 0; i < out.size(); ++i) differ += std::memcmp(&out[i], &ref[i], sizeof(float)) != 0;
    CHECK(differ == 0);
  }
}
