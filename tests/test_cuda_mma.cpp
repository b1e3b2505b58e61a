// The mma.sync GEMM kernels (modconv_mma.cu, conv2d_mma.cu) against the WMMA reference kernels,
// every tile shape (128 x 64, 64 x 64, 64 x 128, forced by set_mma_tile_override, and the automatic
// choice) on small shapes: plain and up (phases) modconv with the fused prologue (style, the x2
// source with scale, bias and activation, x broadcast over the batch) and epilogue (demod, bias,
// activation, residual, channel-slice output), split-K; conv2d with stride, padding, groups,
// bias, residual, split-K; and a shape the mma kernels do not take (odd channels: WMMA either way).
// Both families are also run against the CPU op by test_cuda_modconv and test_cuda_conv2d.
//
// Tolerance: in the emulator both families multiply bit-identical operands (the same prologue,
// rounded once) and add the products in the same k order, so the outputs must be equal bit for
// bit. On a GPU the tensor cores of the two paths may add in different orders: one output ulp
// (2^-10 f16, 2^-7 bf16) of the larger magnitude plus 1e-5 of the output's range.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops_gemm.h"
#include "kernels/cuda/ops_gpen.h"
#include "tests/cuda_emu/test_util.h"

using namespace gpen;
using cuda_test::make_pair;
using cuda_test::TensorPair;
using cuda_tiles::MmaTile;

namespace {

struct Family {
  ~Family() {
    cuda::set_gemm_family(cuda::GemmFamily::mma);
    cuda::set_mma_tile_override({0, 0});
  }
};

void compare(const std::vector<float>& mma, const std::vector<float>& wmma, DType dt, const std::string& what) {
  REQUIRE(mma.size() == wmma.size());
  double range = 0.0;
  for (float v : wmma) range = std::max(range, static_cast<double>(std::fabs(v)));
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < mma.size(); ++i) {
#if defined(GPEN_CUDA_EMU)
    (void)dt;
    const bool ok = std::memcmp(&mma[i], &wmma[i], sizeof(float)) == 0;
#else
    const double ulp = dt == DType::f16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
    const double tol = ulp * std::max(std::fabs(mma[i]), std::fabs(wmma[i])) + 1e-5 * range;
    const bool ok = std::fabs(mma[i] - wmma[i]) <= tol;
#endif
    if (!ok && bad++ == 0) first = i;
  }
  INFO(what << ": " << bad << " of " << mma.size() << " differ; first at " << first << ": mma " << mma[first]
            << ", wmma " << wmma[first]);
  CHECK(bad == 0);
  CHECK(range > 0.0);  // something was computed
}

struct ModCase {
  const char* name;
  int n, xn, h, w, c1, c2, cout, k;
  bool up, epilogue;
  int64_t y_parent_c = 0, y_offset_c = 0;
};

void run_modconv(const ModCase& c, DType dt, MmaTile tile) {
  const int C = c.c1 + c.c2;
  const int ho = c.up ? 2 * (c.h - 1) + c.k : c.h, wo = c.up ? 2 * (c.w - 1) + c.k : c.w;
  const Shape ys{c.n, ho, wo, c.cout};
  const float ws = 1.0f / std::sqrt(static_cast<float>(c.k * c.k * C));
  auto x = make_pair(Shape{c.xn, c.h, c.w, c.c1}, dt, 31);
  auto x2 = make_pair(Shape{c.n, c.h, c.w, std::max(c.c2, 1)}, dt, 32, -2.0f, 2.0f);
  auto x2s = make_pair(Shape{1}, dt, 33, 0.5f, 1.0f);
  auto x2b = make_pair(Shape{std::max(c.c2, 1)}, dt, 34, -0.5f, 0.5f);
  auto w = make_pair(Shape{c.k, c.k, C, c.cout}, dt, 35, -ws, ws);
  auto s = make_pair(Shape{c.n, C}, dt, 36, -1.5f, 1.5f);
  auto d = make_pair(Shape{c.n, c.cout}, dt, 37, 0.5f, 2.0f);
  auto b = make_pair(Shape{c.cout}, dt, 38, -0.5f, 0.5f);
  auto r = make_pair(ys, dt, 39);
  ModConvParams p;
  p.k = c.k, p.up = c.up;
  p.has_x2 = c.c2 > 0, p.x2_act = Activation::scaled_leaky();
  const bool epi = c.epilogue && !c.up;
  p.has_demod = p.has_bias = p.has_residual = epi;
  if (epi) p.act = Activation::scaled_leaky();
  cuda::ModConvArgs a;
  a.x = &x.dv, a.w = &w.dv, a.s = &s.dv;
  if (p.has_x2) a.x2 = &x2.dv, a.x2_scale = &x2s.dv, a.x2_bias = &x2b.dv;
  if (epi) a.d = &d.dv, a.bias = &b.dv, a.residual = &r.dv;
  const size_t wsb = cuda::modconv_workspace_bytes(p, Shape{c.n, c.h, c.w, C}, ys);
  cuda_test::DeviceBuffer work(wsb);
  std::vector<float> out[2];
  for (int f = 0; f < 2; ++f) {
    auto y = make_pair(ys, dt, 40, -1.0f, 1.0f, c.y_parent_c, c.y_offset_c);
    cuda::set_gemm_family(f == 0 ? cuda::GemmFamily::mma : cuda::GemmFamily::wmma);
    cuda::set_mma_tile_override(tile);
    cuda::modconv(p, a, y.dv, wsb ? work.get() : nullptr, nullptr);
    out[f] = y.fetch();
  }
  compare(out[0], out[1], dt, std::string(c.name) + " " + dtype_name(dt) + " tile " + std::to_string(tile.bm) + "x" +
                                  std::to_string(tile.bn));
}

const ModCase kModCases[] = {
    {"3x3 x2 + demod + bias + act + residual", 2, 2, 9, 7, 16, 8, 24, 3, false, true},
    {"3x3 x broadcast, two pixel tiles, slice output", 2, 1, 12, 11, 8, 0, 72, 3, false, true, 88, 8},
    {"1x1", 1, 1, 6, 5, 32, 0, 136, 1, false, true},
    {"up 3x3 with x2", 2, 2, 5, 4, 8, 8, 16, 3, true, false},
    {"up 1x1 (empty phases)", 1, 1, 3, 3, 8, 0, 8, 1, true, false},
    {"split-K 3x3 x2", 1, 1, 4, 4, 32, 32, 24, 3, false, true},
    {"split-K up 3x3", 1, 1, 3, 3, 64, 0, 16, 3, true, false},
    {"odd channels (WMMA either way)", 2, 2, 4, 3, 5, 3, 11, 3, false, true},
};

struct ConvCase {
  const char* name;
  Shape x;
  int cout, k, stride, pad, groups;
  bool epilogue;
};

void run_conv(const ConvCase& c, DType dt, MmaTile tile) {
  Conv2dParams p;
  p.kh = p.kw = c.k;
  p.stride_h = p.stride_w = c.stride;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = c.pad;
  p.groups = c.groups;
  p.has_bias = p.has_residual = c.epilogue;
  if (c.epilogue) p.act = Activation::leaky(0.2f);
  const int64_t cin_g = c.x[3] / c.groups;
  const int64_t ho = (c.x[1] + 2 * c.pad - c.k) / c.stride + 1, wo = (c.x[2] + 2 * c.pad - c.k) / c.stride + 1;
  const Shape ys{c.x[0], ho, wo, c.cout};
  const float ws = 1.0f / std::sqrt(static_cast<float>(c.k * c.k * cin_g));
  auto x = make_pair(c.x, dt, 41);
  auto w = make_pair(Shape{c.k, c.k, cin_g, c.cout}, dt, 42, -ws, ws);
  auto b = make_pair(Shape{c.cout}, dt, 43);
  auto r = make_pair(ys, dt, 44);
  const size_t wsb = cuda::conv2d_workspace_bytes(p, c.x, ys);
  cuda_test::DeviceBuffer work(wsb);
  std::vector<float> out[2];
  for (int f = 0; f < 2; ++f) {
    auto y = make_pair(ys, dt, 45);
    cuda::set_gemm_family(f == 0 ? cuda::GemmFamily::mma : cuda::GemmFamily::wmma);
    cuda::set_mma_tile_override(tile);
    cuda::conv2d(p, x.dv, w.dv, c.epilogue ? &b.dv : nullptr, c.epilogue ? &r.dv : nullptr, y.dv,
                 wsb ? work.get() : nullptr, nullptr);
    out[f] = y.fetch();
  }
  compare(out[0], out[1], dt, std::string(c.name) + " " + dtype_name(dt) + " tile " + std::to_string(tile.bm) + "x" +
                                  std::to_string(tile.bn));
}

const ConvCase kConvCases[] = {
    {"3x3 pad 1, bias + residual + act", Shape{2, 9, 11, 16}, 24, 3, 1, 1, 1, true},
    {"3x3 stride 2 groups 2", Shape{1, 13, 10, 32}, 48, 3, 2, 1, 2, false},
    {"1x1 many channels", Shape{1, 7, 6, 64}, 136, 1, 1, 0, 1, true},
    {"split-K 3x3 deep", Shape{1, 4, 4, 128}, 32, 3, 1, 1, 1, true},
    {"odd channels (WMMA either way)", Shape{1, 5, 5, 6}, 10, 3, 1, 1, 1, true},
};

}  // namespace

// Every case in both dtypes with the automatic tile; every forced tile on the cases that cover
// the prologue, the phases and split-K (f16 and bf16 alternately, to stay quick in the emulator).
TEST_CASE("mma modconv equals the WMMA kernel (f16, bf16, every tile)") {
  Family restore;
  for (const ModCase& c : kModCases)
    for (DType dt : {DType::f16, DType::bf16}) run_modconv(c, dt, {0, 0});
  int i = 0;
  for (MmaTile tile : {MmaTile{128, 64}, MmaTile{64, 64}, MmaTile{64, 128}})
    for (int ci : {0, 3, 5}) run_modconv(kModCases[ci], i++ % 2 ? DType::bf16 : DType::f16, tile);
}

TEST_CASE("mma conv2d equals the WMMA kernel (f16, bf16, every tile)") {
  Family restore;
  for (const ConvCase& c : kConvCases)
    for (DType dt : {DType::f16, DType::bf16}) run_conv(c, dt, {0, 0});
  int i = 0;
  for (MmaTile tile : {MmaTile{128, 64}, MmaTile{64, 64}, MmaTile{64, 128}})
    for (int ci : {0, 1, 3}) run_conv(kConvCases[ci], i++ % 2 ? DType::bf16 : DType::f16, tile);
}

TEST_CASE("GEMM family switch: names, errors, tile overrides") {
  Family restore;
  CHECK(cuda::parse_gemm_family("mma") == cuda::GemmFamily::mma);
  CHECK(cuda::parse_gemm_family("wmma") == cuda::GemmFamily::wmma);
  CHECK_THROWS_WITH_AS(cuda::parse_gemm_family("cublas"), doctest::Contains("GPEN_CUDA_GEMM"), Error);
  CHECK_THROWS_AS(cuda::set_mma_tile_override({32, 32}), Error);
  CHECK(std::string(cuda::gemm_family_name(cuda::GemmFamily::wmma)) == "wmma");
  // The automatic choice: few channels / many pixels, deep with many pixels, small grids.
  CHECK(cuda_tiles::choose_mma_tile(512 * 512, 32, 1).bm == 128);
  CHECK(cuda_tiles::choose_mma_tile(64 * 64, 512, 1).bn == 128);
  const MmaTile small = cuda_tiles::choose_mma_tile(16 * 16, 512, 1);
  CHECK((small.bm == 64 && small.bn == 64));
}
