// CUDA pixel_unshuffle against the CPU op: a copy, so results must be bit-identical in every
// dtype, with a strided (channel-slice) output.
#include <doctest/doctest.h>

#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops.h"
#include "tests/cuda_emu/test_util.h"

using namespace gpen;
using cuda_test::check_close;
using cuda_test::make_pair;

TEST_CASE("cuda pixel_unshuffle matches the CPU op") {
  struct Case {
    Shape in;
    int f;
  };
  const Case cases[] = {{Shape{1, 8, 6, 3}, 2}, {Shape{2, 8, 12, 3}, 4}, {Shape{1, 4, 4, 5}, 1}};
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    for (const Case& c : cases) {
      CAPTURE(std::string(dtype_name(dt)));
      CAPTURE(c.in.str());
      auto x = make_pair(c.in, dt, 1);
      const int64_t Co = c.in[3] * c.f * c.f;
      auto y = make_pair(Shape{c.in[0], c.in[1] / c.f, c.in[2] / c.f, Co}, dt, 2, -1.0f, 1.0f, Co + 3, 1);
      PixelUnshuffleParams p{c.f};
      cpu::pixel_unshuffle(p, x.hv, y.hv);
      cuda::pixel_unshuffle(p, x.dv, y.dv, nullptr);
      check_close(y.fetch(), y.host, {0, 0}, "pixel_unshuffle");
    }
  }
}

TEST_CASE("cuda pixel_unshuffle rejects a size that is not a multiple") {
  auto x = make_pair(Shape{1, 6, 8, 3}, DType::f32, 3);
  auto y = make_pair(Shape{1, 1, 2, 48}, DType::f32, 4);
  CHECK_THROWS_AS(cuda::pixel_unshuffle(PixelUnshuffleParams{4}, x.dv, y.dv, nullptr), Error);
}
