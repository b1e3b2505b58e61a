// CUDA resize_bilinear, noise_bias_act and sft (GFPGAN's ops) against the CPU ops, f32 / f16 /
// bf16, on channel slices and in place. Inputs are rounded to the tested dtype before the CPU
// reference sees them, so what is left is the single rounding of each f16/bf16 result. Bands of
// rows (the banding transform's) equal the whole ops' rows bit for bit.
#include <doctest/doctest.h>

#include <algorithm>

#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops_gfpgan.h"
#include "tests/cuda_emu/test_util.h"

using namespace gpen;
using cuda_test::check_close;
using cuda_test::make_pair;
using cuda_test::output_tolerance;

namespace {

const DType kTypes[] = {DType::f32, DType::f16, DType::bf16};
constexpr cuda_test::Tolerance kF32{1e-6, 1e-6};

}  // namespace

TEST_CASE("cuda resize_bilinear matches the CPU op at x2, 1/2 and other sizes") {
  struct Case {
    Shape in;
    int out_h, out_w;
  };
  const Case cases[] = {{Shape{2, 4, 6, 3}, 8, 12}, {Shape{1, 8, 8, 5}, 4, 4}, {Shape{1, 5, 7, 2}, 3, 11},
                        {Shape{1, 1, 3, 2}, 2, 6}};
  for (DType dt : kTypes) {
    for (const Case& c : cases) {
      CAPTURE(std::string(dtype_name(dt)));
      CAPTURE(c.in.str());
      auto x = make_pair(c.in, dt, 1, -2.0f, 2.0f, c.in[3] + 3, 1);
      const int64_t C = c.in[3];
      auto y = make_pair(Shape{c.in[0], c.out_h, c.out_w, C}, dt, 2, -1.0f, 1.0f, C + 4, 2);
      const ResizeBilinearParams p{c.out_h, c.out_w};
      cpu::resize_bilinear(p, x.hv, y.hv);
      cuda::resize_bilinear(p, x.dv, y.dv, nullptr);
      check_close(y.fetch(), y.host, output_tolerance(dt, kF32), "resize_bilinear");
    }
  }
}

TEST_CASE("cuda noise_bias_act matches the CPU op, with and without bias, in place") {
  for (DType dt : kTypes) {
    CAPTURE(std::string(dtype_name(dt)));
    auto x = make_pair(Shape{2, 3, 5, 7}, dt, 3, -2.0f, 2.0f, 10, 3);
    auto noise = make_pair(Shape{3, 5}, dt, 4, -2.0f, 2.0f);
    auto nw = make_pair(Shape{1}, dt, 5, 0.1f, 0.5f);
    auto b = make_pair(Shape{7}, dt, 6);
    auto y = make_pair(Shape{2, 3, 5, 7}, dt, 7);
    NoiseBiasActParams p;
    p.gain = static_cast<float>(M_SQRT2);
    p.has_bias = true;
    p.act = Activation::leaky(0.2f);
    cpu::noise_bias_act(p, x.hv, noise.hv, nw.hv, &b.hv, y.hv);
    cuda::noise_bias_act(p, x.dv, noise.dv, nw.dv, &b.dv, y.dv, nullptr);
    check_close(y.fetch(), y.host, output_tolerance(dt, kF32), "noise_bias_act");
    NoiseBiasActParams q = p;
    q.has_bias = false;
    cpu::noise_bias_act(q, x.hv, noise.hv, nw.hv, nullptr, x.hv);
    cuda::noise_bias_act(q, x.dv, noise.dv, nw.dv, nullptr, x.dv, nullptr);
    check_close(x.fetch(), x.host, output_tolerance(dt, kF32), "noise_bias_act in place");
  }
}

TEST_CASE("cuda sft matches the CPU op on half and all channels, in place") {
  for (DType dt : kTypes)
    for (int64_t c0 : {int64_t{0}, int64_t{4}}) {
      CAPTURE(std::string(dtype_name(dt)));
      CAPTURE(c0);
      const int64_t C = 8, Cs = C - c0;
      auto x = make_pair(Shape{2, 4, 3, C}, dt, 8, -2.0f, 2.0f);
      // scale and shift as channel slices of wider buffers.
      auto scale = make_pair(Shape{2, 4, 3, Cs}, dt, 9, -2.0f, 2.0f, Cs + 2, 1);
      auto shift = make_pair(Shape{2, 4, 3, Cs}, dt, 10, -1.0f, 1.0f, Cs + 3, 3);
      auto y = make_pair(Shape{2, 4, 3, C}, dt, 11, -1.0f, 1.0f, C + 2, 2);
      cpu::sft(SftParams{c0}, x.hv, scale.hv, shift.hv, y.hv);
      cuda::sft(SftParams{c0}, x.dv, scale.dv, shift.dv, y.dv, nullptr);
      check_close(y.fetch(), y.host, output_tolerance(dt, kF32), "sft");
      cpu::sft(SftParams{c0}, x.hv, scale.hv, shift.hv, x.hv);
      cuda::sft(SftParams{c0}, x.dv, scale.dv, shift.dv, x.dv, nullptr);
      check_close(x.fetch(), x.host, output_tolerance(dt, kF32), "sft in place");
    }
}

// Rows [r0, r0 + rows) of a tensor (a view into the same device and host memory).
TensorView rows_of_view(const TensorView& v, int64_t r0, int64_t rows) {
  TensorView b = v;
  b.shape[1] = rows;
  b.data = static_cast<char*>(v.data) + r0 * v.stride(1) * static_cast<int64_t>(dtype_size(v.dtype));
  return b;
}

TEST_CASE("cuda resize_bilinear and noise_bias_act: bands of rows equal the whole ops' rows bit for bit") {
  struct Case {
    Shape in;
    int out_h, out_w;
  };
  const Case cases[] = {{Shape{2, 8, 6, 3}, 16, 12}, {Shape{1, 16, 8, 5}, 8, 4}, {Shape{1, 5, 7, 2}, 11, 3}};
  for (DType dt : kTypes) {
    for (const Case& c : cases) {
      CAPTURE(std::string(dtype_name(dt)));
      CAPTURE(c.in.str());
      const int64_t N = c.in[0], H = c.in[1], C = c.in[3], Ho = c.out_h, row = int64_t{c.out_w} * C;
      auto x = make_pair(c.in, dt, 21, -2.0f, 2.0f);
      auto y = make_pair(Shape{N, Ho, c.out_w, C}, dt, 22);
      const ResizeBilinearParams p{c.out_h, c.out_w};
      cuda::resize_bilinear(p, x.dv, y.dv, nullptr);
      const auto whole = y.fetch();
      for (int64_t a = 0; a < Ho; a += 3)
        for (int64_t b = a + 1; b <= Ho; b += 2) {
          // The input rows the band's output rows read, a row of margin on each side.
          auto src = [&](int64_t o) { return std::max((double(o) + 0.5) * double(H) / double(Ho) - 0.5, 0.0); };
          const int64_t lo = std::max<int64_t>(0, int64_t(src(a)) - 1);
          const int64_t hi = std::min<int64_t>(H, int64_t(src(b - 1)) + 3);
          auto band = make_pair(Shape{N, b - a, c.out_w, C}, dt, 23);
          ResizeBilinearParams q = p;
          q.in_h = static_cast<int>(H);
          q.in_row0 = static_cast<int>(lo);
          q.out_row0 = static_cast<int>(a);
          cuda::resize_bilinear(q, rows_of_view(x.dv, lo, hi - lo), band.dv, nullptr);
          const auto got = band.fetch();
          int64_t bad = 0;
          for (int64_t n = 0; n < N; ++n)
            for (int64_t i = 0; i < (b - a) * row; ++i)
              bad += got[size_t(n * (b - a) * row + i)] != whole[size_t((n * Ho + a) * row + i)];
          CHECK(bad == 0);
        }
    }
    // noise_bias_act on rows [a, b) with the noise from row a.
    const int64_t N = 2, H = 6, W = 5, C = 7;
    auto x = make_pair(Shape{N, H, W, C}, dt, 24, -2.0f, 2.0f);
    auto noise = make_pair(Shape{H, W}, dt, 25, -2.0f, 2.0f);
    auto nw = make_pair(Shape{1}, dt, 26, 0.1f, 0.5f);
    auto bias = make_pair(Shape{C}, dt, 27);
    auto y = make_pair(Shape{N, H, W, C}, dt, 28);
    NoiseBiasActParams p;
    p.gain = static_cast<float>(M_SQRT2);
    p.has_bias = true;
    p.act = Activation::leaky(0.2f);
    cuda::noise_bias_act(p, x.dv, noise.dv, nw.dv, &bias.dv, y.dv, nullptr);
    const auto whole = y.fetch();
    for (int64_t a = 0; a < H; ++a)
      for (int64_t b = a + 1; b <= H; ++b) {
        auto band = make_pair(Shape{N, b - a, W, C}, dt, 29);
        NoiseBiasActParams q = p;
        q.noise_row0 = static_cast<int>(a);
        cuda::noise_bias_act(q, rows_of_view(x.dv, a, b - a), noise.dv, nw.dv, &bias.dv, band.dv, nullptr);
        const auto got = band.fetch();
        int64_t bad = 0;
        for (int64_t n = 0; n < N; ++n)
          for (int64_t i = 0; i < (b - a) * W * C; ++i)
            bad += got[size_t(n * (b - a) * W * C + i)] != whole[size_t((n * H + a) * W * C + i)];
        CHECK(bad == 0);
      }
  }
}

TEST_CASE("cuda GFPGAN ops refuse mismatched shapes") {
  auto x = make_pair(Shape{1, 4, 4, 4}, DType::f32, 12);
  auto y = make_pair(Shape{1, 8, 8, 3}, DType::f32, 13);
  CHECK_THROWS_AS(cuda::resize_bilinear(ResizeBilinearParams{8, 8}, x.dv, y.dv, nullptr), Error);
  auto noise = make_pair(Shape{2, 8}, DType::f32, 14);
  auto nw = make_pair(Shape{1}, DType::f32, 15);
  CHECK_THROWS_AS(cuda::noise_bias_act(NoiseBiasActParams{}, x.dv, noise.dv, nw.dv, nullptr, x.dv, nullptr), Error);
  CHECK_THROWS_AS(cuda::sft(SftParams{2}, x.dv, x.dv, x.dv, x.dv, nullptr), Error);
  auto h = make_pair(Shape{1, 4, 4, 4}, DType::f16, 16);
  CHECK_THROWS_AS(cuda::sft(SftParams{0}, x.dv, h.dv, h.dv, x.dv, nullptr), Error);
}
