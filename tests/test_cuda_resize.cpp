// CUDA resize_nearest against the CPU op: a copy, so results must be bit-identical in every dtype.
#include <doctest/doctest.h>

#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops.h"
#include "tests/cuda_emu/test_util.h"

using namespace gpen;
using cuda_test::check_close;
using cuda_test::make_pair;

TEST_CASE("cuda resize_nearest matches the CPU op") {
  struct Case {
    Shape in;
    int out_h, out_w;
  };
  const Case cases[] = {{Shape{2, 5, 7, 3}, 8, 4}, {Shape{1, 4, 6, 5}, 8, 12}, {Shape{1, 9, 9, 2}, 3, 5}};
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    for (const Case& c : cases) {
      CAPTURE(std::string(dtype_name(dt)));
      CAPTURE(c.in.str());
      auto x = make_pair(c.in, dt, 1);
      // The output is a channel slice [2, 2 + C) of a wider buffer.
      const int64_t C = c.in[3];
      auto y = make_pair(Shape{c.in[0], c.out_h, c.out_w, C}, dt, 2, -1.0f, 1.0f, C + 4, 2);
      ResizeNearestParams p;
      p.out_h = c.out_h;
      p.out_w = c.out_w;
      cpu::resize_nearest(p, x.hv, y.hv);
      cuda::resize_nearest(p, x.dv, y.dv, nullptr);
      check_close(y.fetch(), y.host, {0, 0}, "resize_nearest");
    }
  }
}

TEST_CASE("cuda resize_nearest rejects a wrong output shape") {
  auto x = make_pair(Shape{1, 4, 4, 2}, DType::f32, 3);
  auto y = make_pair(Shape{1, 8, 8, 3}, DType::f32, 4);
  ResizeNearestParams p;
  p.out_h = p.out_w = 8;
  CHECK_THROWS_AS(cuda::resize_nearest(p, x.dv, y.dv, nullptr), Error);
}
