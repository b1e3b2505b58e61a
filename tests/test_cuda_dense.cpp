// CUDA dense against the CPU op. The warp reduction sums in another order than the CPU's dot
// product; with |x|, |w| <= 1 and 100 inputs the f32 difference stays below 1e-5 absolute.
#include <doctest/doctest.h>

#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops.h"
#include "tests/cuda_emu/test_util.h"

using namespace gpen;
using cuda_test::check_close;
using cuda_test::make_pair;
using cuda_test::output_tolerance;

TEST_CASE("cuda dense matches the CPU op") {
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    CAPTURE(std::string(dtype_name(dt)));
    // x is a [3, 100] slice of a [3, 130] buffer; y a [3, 37] slice of [3, 40].
    auto x = make_pair(Shape{3, 100}, dt, 1, -1.0f, 1.0f, 130, 20);
    auto w = make_pair(Shape{37, 100}, dt, 2);
    auto b = make_pair(Shape{37}, dt, 3);
    auto y = make_pair(Shape{3, 37}, dt, 4, -1.0f, 1.0f, 40, 1);
    DenseParams p;
    p.has_bias = true;
    p.w_scale = 0.1f;
    p.b_scale = 0.5f;
    p.act = Activation::scaled_leaky();
    cpu::dense(p, x.hv, w.hv, &b.hv, y.hv);
    cuda::dense(p, x.dv, w.dv, &b.dv, y.dv, nullptr);
    check_close(y.fetch(), y.host, output_tolerance(dt, {1e-5, 1e-5}), "dense");

    DenseParams q;  // no bias, identity, a single output row
    auto x1 = make_pair(Shape{1, 512}, dt, 5);
    auto w1 = make_pair(Shape{64, 512}, dt, 6);
    auto y1 = make_pair(Shape{1, 64}, dt, 7);
    cpu::dense(q, x1.hv, w1.hv, nullptr, y1.hv);
    cuda::dense(q, x1.dv, w1.dv, nullptr, y1.dv, nullptr);
    check_close(y1.fetch(), y1.host, output_tolerance(dt, {3e-5, 1e-5}), "dense 512");
  }
}

TEST_CASE("cuda dense rejects a weight of the wrong width") {
  auto x = make_pair(Shape{2, 8}, DType::f32, 1);
  auto w = make_pair(Shape{4, 9}, DType::f32, 2);
  auto y = make_pair(Shape{2, 4}, DType::f32, 3);
  CHECK_THROWS_AS(cuda::dense(DenseParams{}, x.dv, w.dv, nullptr, y.dv, nullptr), Error);
}
