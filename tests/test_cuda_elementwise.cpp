// CUDA bias_act and add against the CPU ops, f32 / f16 / bf16, on channel slices and in place.
// Inputs are rounded to the tested dtype before the CPU reference sees them, so the only
// difference left is the single rounding of each f16/bf16 result (see output_tolerance).
#include <doctest/doctest.h>

#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops.h"
#include "tests/cuda_emu/test_util.h"

using namespace gpen;
using cuda_test::check_close;
using cuda_test::make_pair;
using cuda_test::output_tolerance;

namespace {

const DType kTypes[] = {DType::f32, DType::f16, DType::bf16};
constexpr cuda_test::Tolerance kF32{1e-6, 1e-6};

}  // namespace

TEST_CASE("cuda bias_act matches the CPU op") {
  for (DType dt : kTypes) {
    CAPTURE(std::string(dtype_name(dt)));
    // x is a 7-channel slice (offset 2) of a 12-channel buffer, y a dense tensor.
    auto x = make_pair(Shape{2, 3, 5, 7}, dt, 1, -2.0f, 2.0f, 12, 2);
    auto b = make_pair(Shape{7}, dt, 2);
    auto y = make_pair(Shape{2, 3, 5, 7}, dt, 3);
    BiasActParams p;
    p.has_bias = true;
    p.act = Activation::scaled_leaky();
    cpu::bias_act(p, x.hv, &b.hv, y.hv);
    cuda::bias_act(p, x.dv, &b.dv, y.dv, nullptr);
    check_close(y.fetch(), y.host, output_tolerance(dt, kF32), "bias_act");

    // In place on the slice, no bias, relu: the channels around the slice must stay untouched.
    BiasActParams q;
    q.act = Activation::relu();
    cpu::bias_act(q, x.hv, nullptr, x.hv);
    cuda::bias_act(q, x.dv, nullptr, x.dv, nullptr);
    check_close(x.fetch(), x.host, output_tolerance(dt, kF32), "bias_act in place");
  }
}

TEST_CASE("cuda bias_act on rank 1 and rank 2 tensors") {
  auto x = make_pair(Shape{300}, DType::f32, 4);
  auto b = make_pair(Shape{300}, DType::f32, 5);
  BiasActParams p;
  p.has_bias = true;
  p.act = Activation::leaky(0.1f);
  cpu::bias_act(p, x.hv, &b.hv, x.hv);
  cuda::bias_act(p, x.dv, &b.dv, x.dv, nullptr);
  check_close(x.fetch(), x.host, kF32, "rank 1");

  // A [5, 3] slice of a [5, 8] buffer starting at column 4.
  auto m = make_pair(Shape{5, 3}, DType::f32, 6, -1.0f, 1.0f, 8, 4);
  auto mb = make_pair(Shape{3}, DType::f32, 7);
  cpu::bias_act(p, m.hv, &mb.hv, m.hv);
  cuda::bias_act(p, m.dv, &mb.dv, m.dv, nullptr);
  check_close(m.fetch(), m.host, kF32, "rank 2 slice");
}

TEST_CASE("cuda add matches the CPU op, including in place") {
  for (DType dt : kTypes) {
    CAPTURE(std::string(dtype_name(dt)));
    auto a = make_pair(Shape{2, 4, 3, 6}, dt, 10, -1.0f, 1.0f, 9, 3);
    auto b = make_pair(Shape{2, 4, 3, 6}, dt, 11);
    auto y = make_pair(Shape{2, 4, 3, 6}, dt, 12, -1.0f, 1.0f, 10, 0);
    AddParams p;
    p.act = Activation::scaled_leaky();
    cpu::add(p, a.hv, b.hv, y.hv);
    cuda::add(p, a.dv, b.dv, y.dv, nullptr);
    check_close(y.fetch(), y.host, output_tolerance(dt, kF32), "add");

    AddParams q;
    cpu::add(q, a.hv, b.hv, a.hv);
    cuda::add(q, a.dv, b.dv, a.dv, nullptr);
    check_close(a.fetch(), a.host, output_tolerance(dt, kF32), "add in place");
  }
}

TEST_CASE("cuda elementwise ops reject mismatched arguments") {
  auto x = make_pair(Shape{2, 3}, DType::f32, 20);
  auto y = make_pair(Shape{3, 2}, DType::f32, 21);
  auto h = make_pair(Shape{2, 3}, DType::f16, 22);
  CHECK_THROWS_AS(cuda::bias_act(BiasActParams{}, x.dv, nullptr, y.dv, nullptr), Error);
  CHECK_THROWS_AS(cuda::add(AddParams{}, x.dv, h.dv, x.dv, nullptr), Error);
  BiasActParams p;
  p.has_bias = true;
  CHECK_THROWS_AS(cuda::bias_act(p, x.dv, nullptr, x.dv, nullptr), Error);
  auto bad_bias = make_pair(Shape{2}, DType::f32, 23);
  CHECK_THROWS_AS(cuda::bias_act(p, x.dv, &bad_bias.dv, x.dv, nullptr), Error);
}
