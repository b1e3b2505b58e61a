// CUDA pad_reflect against the CPU op: a copy, so bit-identical in every dtype, through channel
// slices, with and without the fused nearest upsample.
#include <doctest/doctest.h>

#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops_gpen.h"
#include "tests/cuda_emu/test_util.h"

using namespace gpen;
using cuda_test::check_close;
using cuda_test::make_pair;

TEST_CASE("cuda pad_reflect matches the CPU op") {
  struct Case {
    Shape in;
    int pad, up;
  };
  const Case cases[] = {{Shape{1, 4, 5, 3}, 1, 1}, {Shape{2, 3, 3, 4}, 1, 2}, {Shape{1, 1, 2, 5}, 1, 2}, {Shape{1, 6, 4, 2}, 2, 1}};
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    for (const Case& c : cases) {
      CAPTURE(std::string(dtype_name(dt)));
      CAPTURE(c.in.str());
      CAPTURE(c.up);
      auto x = make_pair(c.in, dt, 1);
      const int64_t C = c.in[3];
      const Shape ys{c.in[0], c.in[1] * c.up + 2 * c.pad, c.in[2] * c.up + 2 * c.pad, C};
      // The output is a channel slice [1, 1 + C) of a wider buffer.
      auto y = make_pair(ys, dt, 2, -1.0f, 1.0f, C + 3, 1);
      const PadReflectParams p{c.pad, c.up};
      cpu::pad_reflect(p, x.hv, y.hv);
      cuda::pad_reflect(p, x.dv, y.dv, nullptr);
      check_close(y.fetch(), y.host, {0, 0}, "pad_reflect");
    }
  }
}

TEST_CASE("cuda pad_reflect rejects a wrong output shape and a pad as large as the map") {
  auto x = make_pair(Shape{1, 4, 4, 2}, DType::f32, 3);
  auto y = make_pair(Shape{1, 6, 7, 2}, DType::f32, 4);
  CHECK_THROWS_AS(cuda::pad_reflect(PadReflectParams{1, 1}, x.dv, y.dv, nullptr), Error);
  auto x1 = make_pair(Shape{1, 1, 4, 2}, DType::f32, 5);
  auto y1 = make_pair(Shape{1, 3, 6, 2}, DType::f32, 6);
  CHECK_THROWS_AS(cuda::pad_reflect(PadReflectParams{1, 1}, x1.dv, y1.dv, nullptr), Error);
}
