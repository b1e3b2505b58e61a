// CUDA group_norm, layer_norm, smooth_act, attention (self and cross), code_lookup, fuse_sft and adain (the transformer
// ops of CodeFormer and RestoreFormer++) against the CPU ops, f32 / f16 / bf16, on channel slices
// and in place where the op may run so. Inputs are rounded to the tested dtype before the CPU
// reference sees them; the statistics and products are f32 on the device (double on the CPU for
// the norms), which the f32 tolerances below cover, plus one rounding of each f16/bf16 result.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops_transformer.h"
#include "tests/cuda_emu/test_util.h"

using namespace gpen;
using cuda_test::check_close;
using cuda_test::make_pair;
using cuda_test::output_tolerance;

namespace {

const DType kTypes[] = {DType::f32, DType::f16, DType::bf16};
constexpr cuda_test::Tolerance kF32{1e-6, 1e-6};
// Statistics over up to a few hundred values, summed in another order (and precision).
constexpr cuda_test::Tolerance kNorm{1e-5, 1e-5};
// Products of depth up to 64 and a softmax, summed in another order.
constexpr cuda_test::Tolerance kAttn{2e-5, 2e-5};

}  // namespace

TEST_CASE("cuda group_norm matches the CPU op, affine and plain, with and without SiLU") {
  for (DType dt : kTypes)
    for (bool silu : {false, true}) {
      CAPTURE(std::string(dtype_name(dt)));
      CAPTURE(silu);
      auto x = make_pair(Shape{2, 5, 7, 12}, dt, 1, -3.0f, 4.0f, 15, 2);
      auto g = make_pair(Shape{12}, dt, 2, 0.5f, 1.5f);
      auto b = make_pair(Shape{12}, dt, 3);
      auto y = make_pair(Shape{2, 5, 7, 12}, dt, 4, -1.0f, 1.0f, 14, 1);
      const GroupNormParams p{4, 1e-6f, true, silu};
      cpu::group_norm(p, x.hv, &g.hv, &b.hv, y.hv);
      cuda::group_norm(p, x.dv, &g.dv, &b.dv, y.dv, nullptr);
      check_close(y.fetch(), y.host, output_tolerance(dt, kNorm), "group_norm");
      const GroupNormParams q{3, 1e-5f, false, silu};
      cpu::group_norm(q, x.hv, nullptr, nullptr, y.hv);
      cuda::group_norm(q, x.dv, nullptr, nullptr, y.dv, nullptr);
      check_close(y.fetch(), y.host, output_tolerance(dt, kNorm), "group_norm plain");
    }
}

TEST_CASE("cuda layer_norm matches the CPU op, affine and plain, in place") {
  for (DType dt : kTypes) {
    CAPTURE(std::string(dtype_name(dt)));
    auto x = make_pair(Shape{3, 9, 40}, dt, 5, -2.0f, 3.0f, 44, 3);
    auto g = make_pair(Shape{40}, dt, 6, 0.5f, 1.5f);
    auto b = make_pair(Shape{40}, dt, 7);
    auto y = make_pair(Shape{3, 9, 40}, dt, 8);
    cpu::layer_norm(LayerNormParams{1e-5f, true}, x.hv, &g.hv, &b.hv, y.hv);
    cuda::layer_norm(LayerNormParams{1e-5f, true}, x.dv, &g.dv, &b.dv, y.dv, nullptr);
    check_close(y.fetch(), y.host, output_tolerance(dt, kNorm), "layer_norm");
    cpu::layer_norm(LayerNormParams{1e-6f, false}, x.hv, nullptr, nullptr, x.hv);
    cuda::layer_norm(LayerNormParams{1e-6f, false}, x.dv, nullptr, nullptr, x.dv, nullptr);
    check_close(x.fetch(), x.host, output_tolerance(dt, kNorm), "layer_norm in place");
  }
}

TEST_CASE("cuda smooth_act matches the CPU GELU and SiLU, in place") {
  for (DType dt : kTypes)
    for (SmoothAct fn : {SmoothAct::gelu, SmoothAct::silu}) {
      CAPTURE(std::string(dtype_name(dt)));
      auto x = make_pair(Shape{4, 70}, dt, 9, -9.0f, 9.0f, 75, 4);
      auto y = make_pair(Shape{4, 70}, dt, 10);
      cpu::smooth_act(SmoothActParams{fn}, x.hv, y.hv);
      cuda::smooth_act(SmoothActParams{fn}, x.dv, y.dv, nullptr);
      check_close(y.fetch(), y.host, output_tolerance(dt, kF32), "smooth_act");
      cpu::smooth_act(SmoothActParams{fn}, x.hv, x.hv);
      cuda::smooth_act(SmoothActParams{fn}, x.dv, x.dv, nullptr);
      check_close(x.fetch(), x.host, output_tolerance(dt, kF32), "smooth_act in place");
    }
}

TEST_CASE("cuda attention matches the CPU op, with a broadcast position embedding and without") {
  struct Case {
    int64_t n, l, e;
    int heads;
    bool pos;
  };
  for (DType dt : kTypes)
    for (Case c : {Case{2, 19, 24, 3, true}, Case{1, 33, 32, 4, false}}) {
      CAPTURE(std::string(dtype_name(dt)));
      CAPTURE(c.l);
      const int64_t E = c.e;
      auto x = make_pair(Shape{c.n, c.l, E}, dt, 11, -1.0f, 1.0f, E + 2, 1);
      auto pos = make_pair(Shape{1, c.l, E}, dt, 12);
      auto iw = make_pair(Shape{3 * E, E}, dt, 13, -0.3f, 0.3f);
      auto ib = make_pair(Shape{3 * E}, dt, 14, -0.1f, 0.1f);
      auto ow = make_pair(Shape{E, E}, dt, 15, -0.3f, 0.3f);
      auto ob = make_pair(Shape{E}, dt, 16, -0.1f, 0.1f);
      auto y = make_pair(Shape{c.n, c.l, E}, dt, 17, -1.0f, 1.0f, E + 3, 2);
      const AttentionParams p{c.heads, c.pos, false};
      std::vector<char> hws(cpu::attention_workspace_bytes(p, x.shape, cpu::num_threads()));
      cpu::attention(p, {&x.hv, c.pos ? &pos.hv : nullptr, &iw.hv, &ib.hv, &ow.hv, &ob.hv}, y.hv, hws.data());
      cuda_test::DeviceBuffer dws(cuda::attention_workspace_bytes(p, x.shape));
      cuda::attention(p, {&x.dv, c.pos ? &pos.dv : nullptr, &iw.dv, &ib.dv, &ow.dv, &ob.dv}, y.dv, dws.get(), nullptr);
      check_close(y.fetch(), y.host, output_tolerance(dt, kAttn), "attention");
    }
}

TEST_CASE("cuda cross-attention matches the CPU op, queries from a channel slice, with and without a position embedding") {
  for (DType dt : kTypes)
    for (bool with_pos : {true, false}) {
      CAPTURE(std::string(dtype_name(dt)));
      CAPTURE(with_pos);
      const int64_t N = 2, L = 21, E = 32;
      auto x = make_pair(Shape{N, L, E}, dt, 21, -1.0f, 1.0f);
      auto q = make_pair(Shape{N, L, E}, dt, 22, -1.0f, 1.0f, E + 5, 3);
      auto pos = make_pair(Shape{N, L, E}, dt, 23);
      auto iw = make_pair(Shape{3 * E, E}, dt, 24, -0.3f, 0.3f);
      auto ib = make_pair(Shape{3 * E}, dt, 25, -0.1f, 0.1f);
      auto ow = make_pair(Shape{E, E}, dt, 26, -0.3f, 0.3f);
      auto ob = make_pair(Shape{E}, dt, 27, -0.1f, 0.1f);
      auto y = make_pair(Shape{N, L, E}, dt, 28);
      const AttentionParams p{4, with_pos, true};
      std::vector<char> hws(cpu::attention_workspace_bytes(p, x.shape, cpu::num_threads()));
      cpu::attention(p, {&x.hv, with_pos ? &pos.hv : nullptr, &iw.hv, &ib.hv, &ow.hv, &ob.hv, &q.hv}, y.hv, hws.data());
      cuda_test::DeviceBuffer dws(cuda::attention_workspace_bytes(p, x.shape));
      cuda::attention(p, {&x.dv, with_pos ? &pos.dv : nullptr, &iw.dv, &ib.dv, &ow.dv, &ob.dv, &q.dv}, y.dv, dws.get(),
                      nullptr);
      check_close(y.fetch(), y.host, output_tolerance(dt, kAttn), "cross-attention");
    }
}

TEST_CASE("cuda code_lookup picks the CPU op's entries, argmax and argmin, ties to the first") {
  for (DType dt : kTypes)
    for (CodeLookup mode : {CodeLookup::argmax, CodeLookup::argmin}) {
      CAPTURE(std::string(dtype_name(dt)));
      const int64_t K = 45, C = 6;
      const bool am = mode == CodeLookup::argmax;
      auto book = make_pair(Shape{K, C}, dt, 18);
      auto z = make_pair(Shape{2, 3, 5, am ? K : C}, dt, 19, -1.0f, 1.0f, (am ? K : C) + 2, 1);
      // A tie: pixel 0's top logit twice (entries 7 and 40); entry 33 a copy of entry 2.
      for (int64_t c = 0; c < C; ++c) book.host[static_cast<size_t>(33 * C + c)] = book.host[static_cast<size_t>(2 * C + c)];
      if (am) z.host[1 + 7] = z.host[1 + 40] = 5.0f;
      book.dev.upload(cuda_test::encode(book.host, dt));
      z.dev.upload(cuda_test::encode(z.host, dt));
      auto y = make_pair(Shape{2, 3, 5, C}, dt, 20, -1.0f, 1.0f, C + 1, 0);
      std::vector<int32_t> hi(30, -1);
      cuda_test::DeviceBuffer di(30 * sizeof(int32_t));
      const TensorView hiv = make_view(hi.data(), DType::i32, Shape{2, 3, 5});
      const TensorView div = make_view(di.get(), DType::i32, Shape{2, 3, 5});
      cpu::code_lookup(CodeLookupParams{mode}, z.hv, book.hv, y.hv, hiv);
      cuda::code_lookup(CodeLookupParams{mode}, z.dv, book.dv, y.dv, div, nullptr);
      CHECK(di.download<int32_t>(30) == hi);
      if (am) CHECK(hi[0] == 7);
      CHECK(y.fetch() == y.host);
    }
}

TEST_CASE("cuda fuse_sft matches the CPU op, in place") {
  for (DType dt : kTypes) {
    CAPTURE(std::string(dtype_name(dt)));
    auto dec = make_pair(Shape{2, 3, 4, 9}, dt, 21, -2.0f, 2.0f);
    auto scale = make_pair(Shape{2, 3, 4, 9}, dt, 22, -1.0f, 1.0f, 12, 2);
    auto shift = make_pair(Shape{2, 3, 4, 9}, dt, 23);
    auto y = make_pair(Shape{2, 3, 4, 9}, dt, 24, -1.0f, 1.0f, 10, 1);
    cpu::fuse_sft(FuseSftParams{0.5f}, dec.hv, scale.hv, shift.hv, y.hv);
    cuda::fuse_sft(FuseSftParams{0.5f}, dec.dv, scale.dv, shift.dv, y.dv, nullptr);
    check_close(y.fetch(), y.host, output_tolerance(dt, kF32), "fuse_sft");
    cpu::fuse_sft(FuseSftParams{0.5f}, dec.hv, scale.hv, shift.hv, dec.hv);
    cuda::fuse_sft(FuseSftParams{0.5f}, dec.dv, scale.dv, shift.dv, dec.dv, nullptr);
    check_close(dec.fetch(), dec.host, output_tolerance(dt, kF32), "fuse_sft in place");
  }
}

TEST_CASE("cuda transformer ops refuse mismatched shapes and dtypes") {
  auto x = make_pair(Shape{1, 4, 4, 6}, DType::f32, 25);
  auto h = make_pair(Shape{6}, DType::f16, 26);
  CHECK_THROWS_AS(cuda::group_norm(GroupNormParams{4, 1e-6f, false, false}, x.dv, nullptr, nullptr, x.dv, nullptr), Error);
  CHECK_THROWS_AS(cuda::layer_norm(LayerNormParams{}, x.dv, &h.dv, &h.dv, x.dv, nullptr), Error);
  auto seq = make_pair(Shape{1, 4, 6}, DType::f32, 27);
  CHECK_THROWS_AS(cuda::attention(AttentionParams{4, false}, {&seq.dv, nullptr, &seq.dv, &seq.dv, &seq.dv, &seq.dv},
                                  seq.dv, nullptr, nullptr),
                  Error);
  auto book = make_pair(Shape{5, 6}, DType::f32, 28);
  const TensorView no_idx = make_view(nullptr, DType::f32, Shape{1, 4, 4});
  CHECK_THROWS_AS(cuda::code_lookup(CodeLookupParams{CodeLookup::argmin}, x.dv, book.dv, x.dv, no_idx, nullptr), Error);
}

TEST_CASE("cuda adain matches the CPU op on a style of another size") {
  for (DType dt : kTypes) {
    CAPTURE(std::string(dtype_name(dt)));
    auto x = make_pair(Shape{2, 4, 5, 6}, dt, 31, -2.0f, 3.0f, 10, 3);
    auto style = make_pair(Shape{2, 3, 3, 6}, dt, 32, -1.0f, 5.0f);
    auto y = make_pair(Shape{2, 4, 5, 6}, dt, 33, -1.0f, 1.0f, 8, 1);
    cpu::adain(AdaInParams{1e-5f}, x.hv, style.hv, y.hv);
    cuda::adain(AdaInParams{1e-5f}, x.dv, style.dv, y.dv, nullptr);
    check_close(y.fetch(), y.host, output_tolerance(dt, kNorm), "adain");
  }
}
