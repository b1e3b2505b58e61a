// CUDA max_pool2d against the CPU op. A maximum involves no arithmetic, so the results must be
// bit-identical in every dtype (inputs are rounded to the dtype before the CPU sees them).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops_gpen.h"
#include "tests/cuda_emu/test_util.h"

using namespace gpen;
using cuda_test::check_close;
using cuda_test::encode;
using cuda_test::make_pair;

namespace {

MaxPool2dParams pool(int k, int s, int pt, int pl, int pb, int pr) {
  MaxPool2dParams p;
  p.kh = p.kw = k;
  p.stride_h = p.stride_w = s;
  p.pad_top = pt, p.pad_left = pl, p.pad_bottom = pb, p.pad_right = pr;
  return p;
}

}  // namespace

TEST_CASE("cuda max_pool2d matches the CPU op bit for bit") {
  struct Case {
    const char* name;
    Shape x;
    MaxPool2dParams p;
    int64_t x_parent_c = 0, x_offset_c = 0, y_parent_c = 0, y_offset_c = 0;
  };
  const Case cases[] = {
      {"ResNet stem 3x3 s2 p1", Shape{2, 9, 8, 5}, pool(3, 2, 1, 1, 1, 1)},
      {"2x2 s2, no padding, odd size", Shape{1, 7, 7, 3}, pool(2, 2, 0, 0, 0, 0)},
      {"asymmetric padding, stride 1", Shape{1, 5, 6, 4}, pool(3, 1, 2, 0, 1, 2)},
      {"slices in and out", Shape{2, 6, 6, 6}, pool(3, 2, 1, 1, 1, 1), 10, 3, 9, 2},
  };
  for (const Case& c : cases)
    for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
      CAPTURE(std::string(c.name));
      CAPTURE(std::string(dtype_name(dt)));
      const MaxPool2dParams& p = c.p;
      const int64_t ho = (c.x[1] + p.pad_top + p.pad_bottom - p.kh) / p.stride_h + 1;
      const int64_t wo = (c.x[2] + p.pad_left + p.pad_right - p.kw) / p.stride_w + 1;
      // Negative values: a padded tap read as 0 would win and show up.
      auto x = make_pair(c.x, dt, 1, -2.0f, -0.1f, c.x_parent_c, c.x_offset_c);
      auto y = make_pair(Shape{c.x[0], ho, wo, c.x[3]}, dt, 2, -1.0f, 1.0f, c.y_parent_c, c.y_offset_c);
      cpu::max_pool2d(p, x.hv, y.hv);
      cuda::max_pool2d(p, x.dv, y.dv, nullptr);
      check_close(y.fetch(), y.host, {0, 0}, c.name);
    }
}

TEST_CASE("cuda max_pool2d propagates NaN like the CPU op") {
  auto x = make_pair(Shape{1, 4, 4, 2}, DType::f32, 3);
  x.host[(1 * 4 + 1) * 2 + 0] = std::numeric_limits<float>::quiet_NaN();
  x.dev.upload(encode(x.host, DType::f32));
  auto y = make_pair(Shape{1, 2, 2, 2}, DType::f32, 4);
  const MaxPool2dParams p = pool(3, 2, 1, 1, 1, 1);
  cpu::max_pool2d(p, x.hv, y.hv);
  cuda::max_pool2d(p, x.dv, y.dv, nullptr);
  const std::vector<float> got = y.fetch();
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(std::isnan(got[i]) == std::isnan(y.host[i]));
    if (!std::isnan(y.host[i])) CHECK(got[i] == y.host[i]);
  }
  CHECK(std::isnan(y.host[0]));  // the NaN's window did win
}

TEST_CASE("cuda max_pool2d rejects bad arguments") {
  auto x = make_pair(Shape{1, 8, 8, 3}, DType::f32, 1);
  auto y = make_pair(Shape{1, 4, 4, 3}, DType::f32, 2);
  CHECK_THROWS_AS(cuda::max_pool2d(pool(3, 2, 3, 1, 1, 1), x.dv, y.dv, nullptr), Error);  // pad >= kernel
  auto bad = make_pair(Shape{1, 5, 4, 3}, DType::f32, 3);
  CHECK_THROWS_AS(cuda::max_pool2d(pool(3, 2, 1, 1, 1, 1), x.dv, bad.dv, nullptr), Error);
  auto yh = make_pair(Shape{1, 4, 4, 3}, DType::f16, 4);
  CHECK_THROWS_AS(cuda::max_pool2d(pool(3, 2, 1, 1, 1, 1), x.dv, yh.dv, nullptr), Error);
}
