// Banded execution on the CUDA backend (engine/plan/banding.h), in the emulator (tests/cuda_emu),
// natively on a GPU with GPEN_CUDA_TESTS_NATIVE: the banded graph gives the unbanded graph's
// output bit for bit in fp16 (and fp32), for fixed and random band geometries, batch 1 and 2.
// The CUDA depth split (kernels/cuda/splitk.cuh) depends on a call's output tiles, so a band op
// decides it for the whole op's height (split_rows). In this small model the split is capped by
// the depth alone (the whole op and its bands split alike even without split_rows: checked once
// by hand); the second case runs a deep modconv where the band's own decision would differ, and
// checks both that it would and that split_rows prevents it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "engine/models/gpen_model.h"
#include "engine/runtime/cuda/backend_cuda.h"
#include "engine/runtime/device.h"
#include "kernels/cuda/ops_gpen.h"
#include "tests/cuda_emu/test_util.h"

using namespace gpen;

namespace {

GpenConfig gpen32(DType t, int size = 32, double narrow = 1.0 / 32) {
  GpenConfig c;
  c.size = size;
  c.channel_multiplier = 1;
  c.narrow = narrow;
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

std::vector<float> run(Backend& be, DType t, int batch, const PlanOptions& o, const std::vector<float>& in,
                       int size = 32, double narrow = 1.0 / 32) {
  auto m = GpenModel::synthetic(gpen32(t, size, narrow), be, 9);
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
      {DType::f16, 1, 8, 8, {0, 9, 14, 15, 32}},  // odd heights, a one-row band
      {DType::f32, 1, 8, 16, {0, 5, 32}},
  };
  // A random geometry (seeded), batch 2.
  std::vector<int64_t> cuts{0, 32};
  for (int k = 0; k < 3; ++k) cuts.push_back(1 + static_cast<int64_t>(rng() % 31));
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
    const std::vector<float> in = faces(c.batch, 32, 40 + c.batch);
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

TEST_CASE("CUDA banding: a band of a deep modconv splits its depth as the whole op does (split_rows)") {
  // 64 x 64 pixels, 128 channels in (depth 1152), 8 out: the whole op has 32 tiles and splits its
  // depth 8 ways; rows [15, 33) alone have 9 tiles and, deciding for themselves, split 9 ways.
  using cuda_test::make_pair;
  for (DType dt : {DType::f32, DType::f16}) {
    CAPTURE(std::string(dtype_name(dt)));
    auto x = make_pair(Shape{1, 64, 64, 128}, dt, 1, -1.0f, 1.0f);
    auto w = make_pair(Shape{3, 3, 128, 8}, dt, 2, -0.03f, 0.03f);
    auto st = make_pair(Shape{1, 128}, dt, 3, 0.5f, 1.5f);
    auto y = make_pair(Shape{1, 64, 64, 8}, dt, 4);
    auto yb = make_pair(Shape{1, 18, 64, 8}, dt, 5);
    ModConvParams p;
    p.k = 3;
    cuda::ModConvArgs a;
    a.x = &x.dv, a.w = &w.dv, a.s = &st.dv;
    const size_t ws = cuda::modconv_workspace_bytes(p, x.shape, y.shape);
    REQUIRE(ws > 0);  // the whole op splits
    cuda_test::DeviceBuffer dws(ws);
    cuda::modconv(p, a, y.dv, dws.get(), nullptr);
    const std::vector<float> full = y.fetch();
    TensorView xb = x.dv;
    xb.shape[1] = 18;
    xb.data = static_cast<char*>(x.dv.data) + int64_t{15} * 64 * 128 * static_cast<int64_t>(dtype_size(dt));
    cuda::ModConvArgs ab = a;
    ab.x = &xb;
    auto band_rows_equal = [&](int split_rows) {
      ModConvParams q = p;
      q.split_rows = split_rows;
      const size_t wsb = cuda::modconv_workspace_bytes(q, xb.shape, yb.shape);
      cuda_test::DeviceBuffer d(wsb);
      cuda::modconv(q, ab, yb.dv, wsb ? d.get() : nullptr, nullptr);
      const std::vector<float> band = yb.fetch();
      // Band rows 1..16 are full rows 16..31 (rows 0 and 17 saw zero padding).
      return std::memcmp(band.data() + 1 * 64 * 8, full.data() + 16 * 64 * 8, 16 * 64 * 8 * sizeof(float)) == 0;
    };
    CHECK(band_rows_equal(64));
    // The check has teeth: deciding for its own 18 rows, the band sums in another order.
    if (dt == DType::f32) CHECK_FALSE(band_rows_equal(0));
  }
}
