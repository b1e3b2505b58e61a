// conv2d's automatic choice of Winograd F(4x4, 3x3) for stride-1 3x3 convs on maps from 24x24 up
// (kernels/cpu/conv_select.h; RetinaFace R50's layer4 and stride-32 SSH convs), under the default
// options (GPEN_CPU_CONV unset): which shapes take it, and that cpu::conv2d then matches a
// float64 reference within the Winograd tolerance of test_cpu_winograd.cpp (1e-5 of the sum of
// |products| + 1e-5: the transforms' coefficients reach 5 and 8, so F(4x4) rounds a small multiple
// of the direct path's few ulps) and the direct path's result within the sum of both tolerances.
// Registered for the AVX2 and the AVX-512 path (tests/CMakeLists.txt, GPEN_ISA_TESTS).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/winograd.h"

using namespace gpen;

namespace {

Conv2dParams conv3x3(bool bias, bool res, bool relu) {
  Conv2dParams p;
  p.kh = p.kw = 3;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  p.has_bias = bias, p.has_residual = res;
  if (relu) p.act.slope = 0.0f;
  return p;
}

// The Winograd tile the conv rule picks under the default options (0: another path).
int conv2d_winograd_tile(const Conv2dParams& p, const Shape& x, const Shape& y) {
  const cpu::ConvChoice c = cpu::choose_conv(cpu::conv2d_case(p, x, y), {});
  return c.path == cpu::ConvPath::winograd ? c.tile : 0;
}

}  // namespace

TEST_CASE("conv2d takes Winograd F(4x4) on stride-1 3x3 convs from 24x24 up, not below") {
  const Conv2dParams p = conv3x3(true, false, true);
  CHECK(conv2d_winograd_tile(p, Shape{1, 24, 32, 512}, Shape{1, 24, 32, 512}) == 4);  // R50 layer4
  CHECK(conv2d_winograd_tile(p, Shape{1, 24, 32, 256}, Shape{1, 24, 32, 64}) == 4);   // SSH, stride 32
  CHECK(conv2d_winograd_tile(p, Shape{1, 24, 24, 32}, Shape{1, 24, 24, 32}) == 4);
  CHECK(conv2d_winograd_tile(p, Shape{1, 12, 16, 512}, Shape{1, 12, 16, 512}) == 0);  // transform-bound
  CHECK(conv2d_winograd_tile(p, Shape{1, 23, 64, 64}, Shape{1, 23, 64, 64}) == 0);
  CHECK(conv2d_winograd_tile(p, Shape{1, 32, 32, 16}, Shape{1, 32, 32, 64}) == 0);    // few input channels
  Conv2dParams s2 = p;
  s2.stride_h = s2.stride_w = 2;
  CHECK(conv2d_winograd_tile(s2, Shape{1, 48, 64, 512}, Shape{1, 24, 32, 512}) == 0);
}

TEST_CASE("conv2d on a 24x26 map (Winograd F(4x4)) matches the float64 reference and the direct path") {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  // Odd width (clipped edge tiles), 130 input channels (two K blocks), 40 outputs (a tail).
  const int64_t H = 24, W = 26, C = 130, Co = 40;
  const Conv2dParams p = conv3x3(true, true, true);
  const Shape xs{1, H, W, C}, ys{1, H, W, Co};
  REQUIRE(conv2d_winograd_tile(p, xs, ys) == 4);
  std::vector<float> x(static_cast<size_t>(xs.numel())), w(static_cast<size_t>(9 * C * Co)), b(static_cast<size_t>(Co)),
      r(static_cast<size_t>(ys.numel()));
  for (auto& v : x) v = nd(rng);
  for (auto& v : w) v = nd(rng) / std::sqrt(float(9 * C));
  for (auto& v : b) v = 0.3f * nd(rng);
  for (auto& v : r) v = nd(rng);
  std::vector<double> ref(r.size()), mass(r.size());
  for (int64_t oy = 0; oy < H; ++oy)
    for (int64_t ox = 0; ox < W; ++ox)
      for (int64_t o = 0; o < Co; ++o) {
        double acc = b[o], ms = std::abs(b[o]);
        for (int ky = 0; ky < 3; ++ky)
          for (int kx = 0; kx < 3; ++kx) {
            const int64_t iy = oy + ky - 1, ix = ox + kx - 1;
            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
            for (int64_t c = 0; c < C; ++c) {
              const double t = double(x[(iy * W + ix) * C + c]) * w[((ky * 3 + kx) * C + c) * Co + o];
              acc += t, ms += std::abs(t);
            }
          }
        const size_t i = static_cast<size_t>((oy * W + ox) * Co + o);
        ref[i] = std::max(acc, 0.0) + r[i];
        mass[i] = ms + std::abs(r[i]);
      }
  TensorView xv = make_view(x.data(), DType::f32, xs), wv = make_view(w.data(), DType::f32, Shape{3, 3, C, Co});
  TensorView bv = make_view(b.data(), DType::f32, Shape{Co});
  std::vector<float> got[2];
  for (int threads : {1, 2}) {
    cpu::set_num_threads(threads);
    std::vector<float> y = r;  // the residual is the output itself (in place)
    TensorView yv = make_view(y.data(), DType::f32, ys);
    std::vector<unsigned char> ws(cpu::conv2d_workspace_bytes(p, xs, ys, threads), 0xAB);
    cpu::conv2d(p, xv, wv, &bv, &yv, yv, ws.data());
    double worst = 0;
    for (size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::abs(y[i] - ref[i]) / (1e-5 * mass[i] + 1e-5));
    MESSAGE("conv2d 24x26 auto (F(4x4)), " << threads << " threads: " << worst << " of the tolerance");
    CHECK(worst <= 1.0);
    got[threads - 1] = std::move(y);
  }
  cpu::set_num_threads(0);
  // The direct path (the GEMM, within 1e-6 of the mass: test_cpu_winograd.cpp) on the same data:
  // a band's conv (split_rows > 0) never takes Winograd and computes the same sums otherwise.
  Conv2dParams pd = p;
  pd.split_rows = static_cast<int>(H);
  REQUIRE(conv2d_winograd_tile(pd, xs, ys) == 0);
  std::vector<float> y = r;
  TensorView yv = make_view(y.data(), DType::f32, ys);
  std::vector<unsigned char> ws(cpu::conv2d_workspace_bytes(pd, xs, ys, 0), 0xAB);
  cpu::conv2d(pd, xv, wv, &bv, &yv, yv, ws.data());
  double worst = 0, worst_direct = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    worst_direct = std::max(worst_direct, std::abs(y[i] - ref[i]) / (1e-6 * mass[i] + 1e-6));
    worst = std::max(worst, std::abs(double(got[0][i]) - y[i]) / (1.1e-5 * mass[i] + 1.1e-5));
  }
  CHECK(worst_direct <= 1.0);
  CHECK(worst <= 1.0);
  // Both thread counts give the same bits (each tile's sums do not depend on the split).
  CHECK(got[0] == got[1]);
}
