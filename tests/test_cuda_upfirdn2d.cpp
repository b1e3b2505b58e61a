// CUDA upfirdn2d (with its fused epilogue) against the CPU op followed by the CPU epilogue, on
// GPEN's uses of it and on a general asymmetric case (up, down, cropping, a non-symmetric
// kernel, which catches a missing flip).
#include <doctest/doctest.h>

#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops.h"
#include "tests/cuda_emu/test_util.h"

using namespace gpen;
using cuda_test::check_close;
using cuda_test::make_pair;
using cuda_test::output_tolerance;

namespace {

std::vector<float> blur_kernel(float scale) {
  const float k1[4] = {1, 3, 3, 1};
  std::vector<float> k(16);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) k[i * 4 + j] = k1[i] * k1[j] / 64.0f * scale;
  return k;
}

Shape out_shape(const UpFirDn2dParams& p, const Shape& x) {
  return Shape{x[0], (x[1] * p.up_y + p.pad_y0 + p.pad_y1 - p.kh) / p.down_y + 1,
               (x[2] * p.up_x + p.pad_x0 + p.pad_x1 - p.kw) / p.down_x + 1, x[3]};
}

void run_case(const UpFirDn2dParams& p, const Shape& xs, DType dt) {
  auto x = make_pair(xs, dt, 1);
  const Shape ys = out_shape(p, xs);
  auto y = make_pair(ys, dt, 2, -1.0f, 1.0f, ys[3] + 3, 1);  // output: a channel slice
  auto scale = make_pair(Shape{xs[0], xs[3]}, dt, 3, 0.5f, 2.0f);
  auto bias = make_pair(Shape{xs[3]}, dt, 4);
  std::vector<unsigned char> ws(cpu::upfirdn2d_workspace_bytes(p, x.hv.shape, y.hv.shape, 0));
  cpu::upfirdn2d(p, x.hv, y.hv, ws.data());
  if (p.has_out_scale || p.has_bias || !p.act.is_identity())
    cpu::upfirdn2d_epilogue(p, p.has_out_scale ? &scale.hv : nullptr, p.has_bias ? &bias.hv : nullptr, y.hv);
  cuda::upfirdn2d(p, x.dv, p.has_out_scale ? &scale.dv : nullptr, p.has_bias ? &bias.dv : nullptr, y.dv, nullptr,
                  nullptr);
  check_close(y.fetch(), y.host, output_tolerance(dt, {1e-5, 1e-5}), "upfirdn2d");
}

}  // namespace

TEST_CASE("cuda upfirdn2d: GPEN's blurs") {
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    CAPTURE(std::string(dtype_name(dt)));
    UpFirDn2dParams down;  // encoder blur before a stride-2 conv: pad 2, 2
    down.kh = down.kw = 4;
    down.kernel = blur_kernel(1.0f);
    down.pad_x0 = down.pad_x1 = down.pad_y0 = down.pad_y1 = 2;
    run_case(down, Shape{2, 8, 8, 5}, dt);

    UpFirDn2dParams up = down;  // ToRGB skip upsample: up 2, pad 2, 1, kernel 4k
    up.kernel = blur_kernel(4.0f);
    up.up_x = up.up_y = 2;
    up.pad_x1 = up.pad_y1 = 1;
    run_case(up, Shape{1, 5, 6, 3}, dt);

    UpFirDn2dParams tconv = down;  // after the transposed conv: pad 1, 1, with the epilogue
    tconv.kernel = blur_kernel(4.0f);
    tconv.pad_x0 = tconv.pad_x1 = tconv.pad_y0 = tconv.pad_y1 = 1;
    tconv.has_out_scale = tconv.has_bias = true;
    tconv.act = Activation::scaled_leaky();
    run_case(tconv, Shape{2, 9, 9, 4}, dt);
  }
}

TEST_CASE("cuda upfirdn2d: general up, down, crop and an asymmetric kernel") {
  UpFirDn2dParams p;
  p.kh = 3;
  p.kw = 2;
  p.kernel = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f};
  p.up_x = 2, p.up_y = 3;
  p.down_x = 3, p.down_y = 2;
  p.pad_x0 = -1, p.pad_x1 = 2, p.pad_y0 = 2, p.pad_y1 = -2;
  p.has_bias = true;
  p.act = Activation::leaky(0.3f);
  for (DType dt : {DType::f32, DType::f16}) {
    CAPTURE(std::string(dtype_name(dt)));
    run_case(p, Shape{2, 7, 9, 3}, dt);
  }
}

TEST_CASE("cuda upfirdn2d rejects bad arguments") {
  auto x = make_pair(Shape{1, 4, 4, 2}, DType::f32, 1);
  auto y = make_pair(Shape{1, 4, 4, 2}, DType::f32, 2);
  UpFirDn2dParams p;
  p.kh = p.kw = 2;
  p.kernel = {1, 2, 3};  // 3 taps for a 2x2 kernel
  CHECK_THROWS_AS(cuda::upfirdn2d(p, x.dv, nullptr, nullptr, y.dv, nullptr, nullptr), Error);
  p.kernel = {1, 2, 3, 4};  // right taps, but the output should be 3x3
  CHECK_THROWS_AS(cuda::upfirdn2d(p, x.dv, nullptr, nullptr, y.dv, nullptr, nullptr), Error);
}
