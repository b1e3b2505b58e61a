// CUDA conv2d (tensor-core WMMA, SIMT and depthwise kernels) against the CPU op, on shapes that
// exercise the tile tails (M, N and K not multiples of the tiles), several tiles, strides,
// asymmetric padding, groups, strided input and output views, and the fused epilogue.
//
// Tolerances: inputs, weights, bias and residual are rounded to the tested dtype before the CPU
// reference sees them, products of f16/bf16 values are exact in f32, and every kernel
// accumulates in f32; the results therefore differ from the CPU's only by f32 summation order
// (weights are scaled by 1/sqrt(K), so outputs are O(1) and that difference is ~1e-6) plus, for
// f16/bf16 outputs, one rounding of the result (one ulp: 2^-10 / 2^-7 relative).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops_gemm.h"
#include "tests/cuda_emu/test_util.h"

using namespace gpen;
using cuda_test::check_close;
using cuda_test::make_pair;
using cuda_test::output_tolerance;

namespace {

struct ConvCase {
  const char* name;
  Shape x;  // NHWC
  int cout;
  Conv2dParams p;
  int64_t x_parent_c = 0, x_offset_c = 0;  // input as a channel slice when x_parent_c > 0
  int64_t y_parent_c = 0, y_offset_c = 0;  // output as a channel slice when y_parent_c > 0
  bool split = false;                      // expected to split its depth (splitk.cuh)
};

Conv2dParams params(int k, int stride, int pad, int groups, bool bias, bool residual, Activation act) {
  Conv2dParams p;
  p.kh = p.kw = k;
  p.stride_h = p.stride_w = stride;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = pad;
  p.groups = groups;
  p.has_bias = bias;
  p.has_residual = residual;
  p.act = act;
  return p;
}

void run_case(const ConvCase& c, DType dt, cuda::ConvAlgo algo) {
  CAPTURE(std::string(c.name));
  CAPTURE(std::string(dtype_name(dt)));
  CAPTURE(static_cast<int>(algo));
  const Conv2dParams& p = c.p;
  const int64_t cin_g = c.x[3] / p.groups;
  const int64_t ho = (c.x[1] + p.pad_top + p.pad_bottom - p.kh) / p.stride_h + 1;
  const int64_t wo = (c.x[2] + p.pad_left + p.pad_right - p.kw) / p.stride_w + 1;
  const Shape ys{c.x[0], ho, wo, c.cout};
  const float wscale = 1.0f / std::sqrt(static_cast<float>(p.kh * p.kw * cin_g));

  auto x = make_pair(c.x, dt, 1, -1.0f, 1.0f, c.x_parent_c, c.x_offset_c);
  auto w = make_pair(Shape{p.kh, p.kw, cin_g, c.cout}, dt, 2, -wscale, wscale);
  auto b = make_pair(Shape{c.cout}, dt, 3, -0.5f, 0.5f);
  auto r = make_pair(ys, dt, 4);
  auto y = make_pair(ys, dt, 5, -1.0f, 1.0f, c.y_parent_c, c.y_offset_c);

  std::vector<unsigned char> ws(cpu::conv2d_workspace_bytes(p, x.hv.shape, y.hv.shape, 0));
  cpu::conv2d(p, x.hv, w.hv, p.has_bias ? &b.hv : nullptr, p.has_residual ? &r.hv : nullptr, y.hv, ws.data());
  // Split-K (a workspace of [splits][M][Cout] f32 partial sums) only for deep, small GEMMs.
  const size_t wsb = cuda::conv2d_workspace_bytes(p, x.dv.shape, y.dv.shape);
  const bool split = c.split;
  CHECK((wsb > 0) == split);
  if (split) CHECK(wsb % (static_cast<size_t>(ys.numel()) * 4) == 0);
  cuda_test::DeviceBuffer dws(wsb);
  cuda::conv2d(p, x.dv, w.dv, p.has_bias ? &b.dv : nullptr, p.has_residual ? &r.dv : nullptr, y.dv,
               wsb ? dws.get() : nullptr, nullptr, algo);
  check_close(y.fetch(), y.host, output_tolerance(dt, {2e-5, 2e-5}), c.name);
  if (split)  // a split conv cannot run without its workspace
    CHECK_THROWS_AS(cuda::conv2d(p, x.dv, w.dv, p.has_bias ? &b.dv : nullptr, p.has_residual ? &r.dv : nullptr, y.dv,
                                 nullptr, nullptr, algo),
                    Error);
}

const Activation kLrelu = Activation::scaled_leaky();

const ConvCase kGemmCases[] = {
    // 3x3 same conv; K = 45 and cout = 19 leave tails in every tile dimension.
    {"3x3 pad 1, bias + act + residual", Shape{2, 7, 6, 5}, 19, params(3, 1, 1, 1, true, true, kLrelu)},
    // Stride 2, no padding, K = 288 (9 depth steps of 32), cout 70: two channel tiles; two tiles in
    // all, so the depth splits into chunks of 256 and 32.
    {"3x3 stride 2, deep", Shape{1, 9, 9, 32}, 70, params(3, 2, 0, 1, true, false, Activation::leaky(0.1f)), 0, 0, 0,
     0, true},
    // 144 output pixels: three pixel tiles; asymmetric padding below.
    {"asymmetric pad", Shape{1, 12, 12, 8}, 16,
     [] {
       Conv2dParams p = params(3, 1, 0, 1, false, false, Activation::none());
       p.pad_top = 1, p.pad_left = 2, p.pad_bottom = 0, p.pad_right = 1;
       p.kw = 4;
       return p;
     }()},
    // 1x1 from a channel slice into a channel slice (a concatenation buffer).
    {"1x1 slices", Shape{2, 5, 5, 24}, 12, params(1, 1, 0, 1, true, false, Activation::relu()), 40, 8, 30, 12},
    // Grouped: 2 groups of 8 -> 6 channels.
    {"groups 2", Shape{1, 6, 6, 16}, 12, params(3, 1, 1, 2, true, true, kLrelu)},
    // Split-K: one pixel tile and two channel tiles, depth 3 * 3 * 72 = 648 -> chunks of 256, 256
    // and 136, into an output slice with the whole epilogue (GPEN's small encoder layers).
    {"split-K 3x3 deep", Shape{1, 4, 5, 72}, 70, params(3, 1, 1, 1, true, true, kLrelu), 0, 0, 80, 4, true},
    // Split-K with groups: 2 groups, depth 3 * 3 * 32 = 288 each -> chunks of 256 and 32.
    {"split-K groups 2", Shape{2, 3, 3, 64}, 24, params(3, 1, 1, 2, false, false, Activation::none()), 0, 0, 0, 0,
     true},
};

}  // namespace

// Both GEMM families (kernels/cuda/ops_gemm.h): mma.sync (the default; shapes it does not take
// run on WMMA) and the WMMA reference kernels.
TEST_CASE("cuda conv2d tensor-core kernels (f16, bf16, mma and WMMA) match the CPU op") {
  for (cuda::GemmFamily f : {cuda::GemmFamily::mma, cuda::GemmFamily::wmma}) {
    cuda::set_gemm_family(f);
    CAPTURE(std::string(cuda::gemm_family_name(f)));
    for (const ConvCase& c : kGemmCases)
      for (DType dt : {DType::f16, DType::bf16}) run_case(c, dt, cuda::ConvAlgo::automatic);
  }
  cuda::set_gemm_family(cuda::GemmFamily::mma);
}

TEST_CASE("cuda conv2d SIMT kernel (f32, and f16 forced) matches the CPU op") {
  for (const ConvCase& c : kGemmCases) {
    run_case(c, DType::f32, cuda::ConvAlgo::automatic);
    run_case(c, DType::f16, cuda::ConvAlgo::simt);
  }
}

TEST_CASE("cuda conv2d depthwise kernel matches the CPU op") {
  const ConvCase cases[] = {
      {"depthwise 3x3 stride 2", Shape{2, 9, 8, 24}, 24, params(3, 2, 1, 24, true, false, Activation::leaky(0.1f))},
      {"depthwise 3x3 residual, output slice", Shape{1, 6, 7, 10}, 10, params(3, 1, 1, 10, true, true, kLrelu), 0, 0,
       16, 3},
  };
  for (const ConvCase& c : cases)
    for (DType dt : {DType::f32, DType::f16, DType::bf16}) run_case(c, dt, cuda::ConvAlgo::automatic);
  // The GEMM kernels handle the depthwise shape too (one channel per group).
  run_case(cases[0], DType::f32, cuda::ConvAlgo::simt);
  run_case(cases[0], DType::f16, cuda::ConvAlgo::tensor_core);
}

TEST_CASE("cuda conv2d rejects bad arguments") {
  auto x = make_pair(Shape{1, 5, 5, 4}, DType::f32, 1);
  auto w = make_pair(Shape{3, 3, 4, 8}, DType::f32, 2);
  auto y = make_pair(Shape{1, 5, 5, 8}, DType::f32, 3);
  const Conv2dParams p = params(3, 1, 1, 1, false, false, Activation::none());
  auto bad_w = make_pair(Shape{3, 3, 5, 8}, DType::f32, 4);
  CHECK_THROWS_AS(cuda::conv2d(p, x.dv, bad_w.dv, nullptr, nullptr, y.dv, nullptr, nullptr), Error);
  auto bad_y = make_pair(Shape{1, 4, 5, 8}, DType::f32, 5);
  CHECK_THROWS_AS(cuda::conv2d(p, x.dv, w.dv, nullptr, nullptr, bad_y.dv, nullptr, nullptr), Error);
  CHECK_THROWS_AS(cuda::conv2d(p, x.dv, w.dv, nullptr, nullptr, y.dv, nullptr, nullptr, cuda::ConvAlgo::tensor_core),
                  Error);
  CHECK_THROWS_AS(cuda::conv2d(p, x.dv, w.dv, nullptr, nullptr, y.dv, nullptr, nullptr, cuda::ConvAlgo::depthwise),
                  Error);
  Conv2dParams with_bias = p;
  with_bias.has_bias = true;
  CHECK_THROWS_AS(cuda::conv2d(with_bias, x.dv, w.dv, nullptr, nullptr, y.dv, nullptr, nullptr), Error);
}
