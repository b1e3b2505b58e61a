// CUDA conv2d with act_after_residual (kernels/params.h: y = act(conv + bias + residual), the relu
// after a ResNet block's add) against the CPU op, which test_cpu_conv2d_1x1 checks against a
// naive conv: the SIMT (f32), tensor-core (f16) and depthwise kernels, the residual also as the
// output itself. Tolerances as in test_cuda_conv2d.cpp (f32 summation order; f16: one rounding).
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops.h"
#include "tests/cuda_emu/test_util.h"

using namespace gpen;
using cuda_test::check_close;
using cuda_test::make_pair;
using cuda_test::output_tolerance;

namespace {

void run_case(const char* name, const Shape& xs, int64_t cout, int k, int groups, DType dt, bool in_place) {
  CAPTURE(std::string(name));
  CAPTURE(std::string(dtype_name(dt)));
  Conv2dParams p;
  p.kh = p.kw = k;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = k / 2;
  p.groups = groups;
  p.has_bias = p.has_residual = true;
  p.act = Activation::scaled_leaky();
  p.act_after_residual = true;
  const Shape ys{xs[0], xs[1], xs[2], cout};
  const int64_t cin_g = xs[3] / groups;
  const float wscale = 1.0f / std::sqrt(static_cast<float>(k * k * cin_g));
  auto x = make_pair(xs, dt, 11);
  auto w = make_pair(Shape{k, k, cin_g, cout}, dt, 12, -wscale, wscale);
  auto b = make_pair(Shape{cout}, dt, 13, -0.5f, 0.5f);
  auto r = make_pair(ys, dt, 14);
  auto y = make_pair(ys, dt, 14);  // the same values as r: the in-place case reads them as the residual
  std::vector<unsigned char> ws(cpu::conv2d_workspace_bytes(p, x.hv.shape, y.hv.shape, 0));
  cpu::conv2d(p, x.hv, w.hv, &b.hv, in_place ? &y.hv : &r.hv, y.hv, ws.data());
  const size_t wsb = cuda::conv2d_workspace_bytes(p, x.dv.shape, y.dv.shape);
  cuda_test::DeviceBuffer dws(wsb);
  cuda::conv2d(p, x.dv, w.dv, &b.dv, in_place ? &y.dv : &r.dv, y.dv, wsb ? dws.get() : nullptr, nullptr);
  check_close(y.fetch(), y.host, output_tolerance(dt, {2e-5, 2e-5}), name);
  // The flag changes the result: some sums cross zero between act(s) + r and act(s + r).
  Conv2dParams q = p;
  q.act_after_residual = false;
  auto y2 = make_pair(ys, dt, 14);
  cuda::conv2d(q, x.dv, w.dv, &b.dv, &r.dv, y2.dv, wsb ? dws.get() : nullptr, nullptr);
  const auto a = y2.fetch();
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - y.host[i]));
  CHECK(diff > 0.05);
}

}  // namespace

TEST_CASE("cuda conv2d act_after_residual matches the CPU op") {
  for (bool in_place : {false, true}) {
    run_case("1x1", Shape{1, 5, 6, 24}, 40, 1, 1, DType::f32, in_place);
    run_case("3x3", Shape{1, 6, 5, 8}, 19, 3, 1, DType::f32, in_place);
    run_case("3x3 f16", Shape{1, 6, 5, 8}, 19, 3, 1, DType::f16, in_place);
    run_case("depthwise 3x3", Shape{1, 6, 7, 10}, 10, 3, 10, DType::f32, in_place);
  }
}
