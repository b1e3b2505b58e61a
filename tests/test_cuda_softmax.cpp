// CUDA softmax (last axis) against the CPU op. The GPU sums in f32 in another order than the
// CPU's double sum, and expf may differ by an ulp or two: 4e-6 relative (70 terms times the f32
// epsilon) covers both.
#include <doctest/doctest.h>

#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops.h"
#include "tests/cuda_emu/test_util.h"

using namespace gpen;
using cuda_test::check_close;
using cuda_test::make_pair;
using cuda_test::output_tolerance;

TEST_CASE("cuda softmax matches the CPU op") {
  const Shape shapes[] = {Shape{3, 40, 2}, Shape{5, 70}, Shape{7}};
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    for (const Shape& s : shapes) {
      CAPTURE(std::string(dtype_name(dt)));
      CAPTURE(s.str());
      auto x = make_pair(s, dt, 1, -8.0f, 8.0f);
      auto y = make_pair(s, dt, 2);
      cpu::softmax(SoftmaxParams{}, x.hv, y.hv);
      cuda::softmax(SoftmaxParams{}, x.dv, y.dv, nullptr);
      check_close(y.fetch(), y.host, output_tolerance(dt, {1e-7, 4e-6}), "softmax");
    }
  }
}

TEST_CASE("cuda softmax in place on a channel slice") {
  // Logits [N, A, 2] living in channels [1, 3) of a [N, A, 5] buffer.
  auto x = make_pair(Shape{2, 33, 2}, DType::f32, 3, -5.0f, 5.0f, 5, 1);
  cpu::softmax(SoftmaxParams{}, x.hv, x.hv);
  cuda::softmax(SoftmaxParams{}, x.dv, x.dv, nullptr);
  check_close(x.fetch(), x.host, {1e-7, 4e-6}, "softmax in place");
}
