// CUDA pixel_norm and demod against the CPU ops. Inputs are rounded to the tested dtype before
// the CPU (double accumulation) sees them, so the results differ only by the f32 sums of the GPU
// (<= n u32 relative for n terms of one sign: ~1e-5 for 512; we allow 1e-5 + a bit) and, for
// f16/bf16, one final rounding (one ulp, output_tolerance).
#include <doctest/doctest.h>

#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops_gpen.h"
#include "tests/cuda_emu/test_util.h"

using namespace gpen;
using cuda_test::check_close;
using cuda_test::make_pair;
using cuda_test::output_tolerance;

TEST_CASE("cuda pixel_norm matches the CPU op") {
  struct Case {
    const char* name;
    Shape shape;
    int64_t parent_last = 0, offset_last = 0;
  };
  const Case cases[] = {
      {"latent batch 2 x 512", Shape{2, 512}},
      {"rank 3, short rows", Shape{3, 2, 7}},
      {"rank 1", Shape{33}},
      {"channel slice in and out", Shape{4, 40}, 64, 5},
  };
  for (const Case& c : cases)
    for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
      CAPTURE(std::string(c.name));
      CAPTURE(std::string(dtype_name(dt)));
      auto x = make_pair(c.shape, dt, 1, -3.0f, 3.0f, c.parent_last, c.offset_last);
      auto y = make_pair(c.shape, dt, 2, -1.0f, 1.0f, c.parent_last, c.offset_last);
      cpu::pixel_norm({}, x.hv, y.hv);
      cuda::pixel_norm({}, x.dv, y.dv, nullptr);
      check_close(y.fetch(), y.host, output_tolerance(dt, {1e-6, 2e-5}), c.name);
    }
}

TEST_CASE("cuda pixel_norm runs in place") {
  auto x = make_pair(Shape{3, 100}, DType::f32, 3);
  std::vector<float> want(x.host.size());
  TensorView wv = make_view(want.data(), DType::f32, x.shape);
  cpu::pixel_norm({}, x.hv, wv);
  cuda::pixel_norm({}, x.dv, x.dv, nullptr);
  check_close(x.fetch(), want, {1e-6, 2e-5}, "in place");
}

TEST_CASE("cuda demod matches the CPU op") {
  struct Case {
    const char* name;
    int n, cin, cout;
  };
  const Case cases[] = {{"batch 1, 512 -> 32", 1, 512, 32}, {"batch 2, odd sizes", 2, 37, 5}, {"one input", 3, 1, 4}};
  for (const Case& c : cases)
    for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
      CAPTURE(std::string(c.name));
      CAPTURE(std::string(dtype_name(dt)));
      auto s = make_pair(Shape{c.n, c.cin}, dt, 4, -2.0f, 2.0f);
      // Q[o, i] = sum over taps of the squared scaled weight: positive, ~1/cin.
      auto q = make_pair(Shape{c.cout, c.cin}, dt, 5, 0.1f / c.cin, 2.0f / c.cin);
      auto d = make_pair(Shape{c.n, c.cout}, dt, 6);
      cpu::demod({}, s.hv, q.hv, d.hv);
      cuda::demod({}, s.dv, q.dv, d.dv, nullptr);
      check_close(d.fetch(), d.host, output_tolerance(dt, {1e-6, 2e-5}), c.name);
    }
  // Strided views: s and d as column slices of wider tensors.
  auto s = make_pair(Shape{2, 24}, DType::f32, 7, -1.0f, 1.0f, 40, 3);
  auto q = make_pair(Shape{6, 24}, DType::f32, 8, 0.01f, 0.1f);
  auto d = make_pair(Shape{2, 6}, DType::f32, 9, -1.0f, 1.0f, 10, 4);
  cpu::demod({}, s.hv, q.hv, d.hv);
  cuda::demod({}, s.dv, q.dv, d.dv, nullptr);
  check_close(d.fetch(), d.host, {1e-6, 2e-5}, "strided");
}

TEST_CASE("cuda latent ops reject bad arguments") {
  auto x = make_pair(Shape{2, 8}, DType::f32, 1);
  auto y = make_pair(Shape{2, 9}, DType::f32, 2);
  CHECK_THROWS_AS(cuda::pixel_norm({}, x.dv, y.dv, nullptr), Error);
  auto s = make_pair(Shape{2, 8}, DType::f32, 3);
  auto q = make_pair(Shape{4, 7}, DType::f32, 4);
  auto d = make_pair(Shape{2, 4}, DType::f32, 5);
  CHECK_THROWS_AS(cuda::demod({}, s.dv, q.dv, d.dv, nullptr), Error);
  auto qh = make_pair(Shape{4, 8}, DType::f16, 6);
  CHECK_THROWS_AS(cuda::demod({}, s.dv, qh.dv, d.dv, nullptr), Error);
}
