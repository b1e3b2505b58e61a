// The per-ISA row kernels outside the GEMMs (kernels/cpu/isa.h): the weighted row sum of
// upfirdn2d (both copies must give the same bits: the taps are summed in the same order) and the
// dot-product path of the to_rgb modconv (modconv_rgb.h: lanes summed by halving, so the copies
// agree to fp32 rounding), each against a float64 reference; tests/CMakeLists.txt runs this file
// once per ISA path as well.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "blur_fixture.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/modconv_rgb.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/upfirdn2d_act.h"
#include "kernels/cpu/upfirdn2d_kernel.h"
#include "engine/core/error.h"

using namespace gpen;

namespace {

std::vector<float> rnd(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

double max_rel(const std::vector<float>& a, const std::vector<double>& ref) {
  double err = 0, mag = 1e-3;
  for (size_t i = 0; i < ref.size(); ++i) {
    err = std::max(err, std::fabs(a[i] - ref[i]));
    mag = std::max(mag, std::fabs(ref[i]));
  }
  return err / mag;
}

}  // namespace

TEST_CASE("upfirdn2d weighted row sum: each ISA copy sums the taps as a float64 loop, and both give the same bits") {
  std::mt19937 rng(5);
  for (int nt : {1, 2, 4, 7})
    for (int64_t len : {0, 1, 7, 8, 15, 16, 31, 33, 64, 65, 127, 200}) {
      std::vector<std::vector<float>> rows;
      std::vector<const float*> src;
      for (int t = 0; t < nt; ++t) rows.push_back(rnd(static_cast<size_t>(len) + 1, rng));
      for (auto& r : rows) src.push_back(r.data());
      const auto w = rnd(static_cast<size_t>(nt), rng);
      for (bool acc : {false, true}) {
        CAPTURE(nt);
        CAPTURE(len);
        CAPTURE(acc);
        const auto init = rnd(static_cast<size_t>(len) + 1, rng);
        std::vector<double> ref(static_cast<size_t>(len));
        for (int64_t i = 0; i < len; ++i) {
          double s = acc ? init[i] : 0.0;
          for (int t = 0; t < nt; ++t) s += double(w[t]) * rows[t][i];
          ref[i] = s;
        }
        auto d0 = init;
        cpu::upfirdn2d_detail::isa_base::weighted_sum(d0.data(), src.data(), w.data(), nt, len, acc);
        CHECK(max_rel(d0, ref) <= 4e-6);
        CHECK(d0[len] == init[len]);  // nothing past len
#if GPEN_HAVE_AVX512_KERNELS
        if (cpu::cpu_has_avx512()) {
          auto d1 = init;
          cpu::upfirdn2d_detail::isa_avx512::weighted_sum(d1.data(), src.data(), w.data(), nt, len, acc);
          CHECK(std::memcmp(d0.data(), d1.data(), d0.size() * sizeof(float)) == 0);
        }
#endif
      }
    }
}

TEST_CASE("upfirdn2d blur on whole rows (flat horizontal pass) matches the definition, cropped and padded") {
  std::mt19937 rng(9);
  const float b4[4] = {1, 3, 3, 1};
  struct Spec {
    int p0, p1;
    int64_t H, W, C;
  };
  for (const Spec s : {Spec{2, 2, 9, 70, 40}, Spec{-1, 3, 6, 33, 17}, Spec{0, 0, 5, 4, 64}, Spec{3, -2, 7, 12, 3}}) {
    UpFirDn2dParams p;
    p.kh = p.kw = 4;
    for (float u : b4)
      for (float v : b4) p.kernel.push_back(u * v / 64.0f);
    p.pad_x0 = p.pad_y0 = s.p0;
    p.pad_x1 = p.pad_y1 = s.p1;
    const int64_t Ho = s.H + s.p0 + s.p1 - 3, Wo = s.W + s.p0 + s.p1 - 3;
    const Shape xs{1, s.H, s.W, s.C}, ys{1, Ho, Wo, s.C};
    auto x = rnd(static_cast<size_t>(xs.numel()), rng);
    std::vector<float> y(static_cast<size_t>(ys.numel()), NAN);
    std::vector<double> ref(y.size());
    for (int64_t oy = 0; oy < Ho; ++oy)
      for (int64_t ox = 0; ox < Wo; ++ox)
        for (int64_t c = 0; c < s.C; ++c) {
          double a = 0;
          for (int ky = 0; ky < 4; ++ky)
            for (int kx = 0; kx < 4; ++kx) {
              const int64_t iy = oy + ky - s.p0, ix = ox + kx - s.p0;
              if (iy >= 0 && iy < s.H && ix >= 0 && ix < s.W)
                a += double(b4[3 - ky]) * b4[3 - kx] / 64.0 * x[static_cast<size_t>((iy * s.W + ix) * s.C + c)];
            }
          ref[static_cast<size_t>((oy * Wo + ox) * s.C + c)] = a;
        }
    std::vector<unsigned char> ws(cpu::upfirdn2d_workspace_bytes(p, xs, ys, 0));
    cpu::upfirdn2d(p, make_view(x.data(), DType::f32, xs), make_view(y.data(), DType::f32, ys), ws.data());
    CAPTURE(s.p0);
    CAPTURE(s.W);
    CHECK(max_rel(y, ref) <= 1e-5);
  }
}

TEST_CASE("to_rgb modconv (1x1, few outputs) on the dot-product path matches a float64 reference") {
  std::mt19937 rng(11);
  struct Spec {
    int64_t N, XN, H, W, C1, C2, Co;
    bool demod, residual;
  };
  const Spec specs[] = {
      {1, 1, 5, 7, 32, 32, 3, false, true},  // GPEN's to_rgb
      {2, 1, 3, 4, 37, 19, 4, true, true},   // channel tails, broadcast x, demod
      {2, 2, 4, 3, 64, 0, 1, false, false},  // no noise input
      {1, 1, 2, 9, 5, 3, 2, true, false},    // fewer channels than a vector
  };
  for (const Spec& s : specs) {
    CAPTURE(s.C1);
    CAPTURE(s.Co);
    const int64_t C = s.C1 + s.C2;
    ModConvParams p;
    p.k = 1;
    p.has_x2 = s.C2 > 0;
    p.x2_act = Activation::scaled_leaky();
    p.has_demod = s.demod;
    p.has_bias = true;
    p.has_residual = s.residual;
    p.act = Activation::leaky(0.1f);
    auto x = rnd(static_cast<size_t>(s.XN * s.H * s.W * s.C1), rng);
    auto x2 = rnd(static_cast<size_t>(s.N * s.H * s.W * std::max<int64_t>(s.C2, 1)), rng);
    auto x2b = rnd(static_cast<size_t>(std::max<int64_t>(s.C2, 1)), rng);
    std::vector<float> x2s{0.7f};
    auto w = rnd(static_cast<size_t>(C * s.Co), rng);
    auto sv = rnd(static_cast<size_t>(s.N * C), rng);
    auto d = rnd(static_cast<size_t>(s.N * s.Co), rng);
    auto bias = rnd(static_cast<size_t>(s.Co), rng);
    auto res = rnd(static_cast<size_t>(s.N * s.H * s.W * s.Co), rng);
    std::vector<float> y(res.size(), NAN);
    TensorView xv = make_view(x.data(), DType::f32, Shape{s.XN, s.H, s.W, s.C1});
    TensorView x2v = make_view(x2.data(), DType::f32, Shape{s.N, s.H, s.W, s.C2});
    TensorView x2sv = make_view(x2s.data(), DType::f32, Shape{1});
    TensorView x2bv = make_view(x2b.data(), DType::f32, Shape{s.C2});
    TensorView wv = make_view(w.data(), DType::f32, Shape{1, 1, C, s.Co});
    TensorView svv = make_view(sv.data(), DType::f32, Shape{s.N, C});
    TensorView dv = make_view(d.data(), DType::f32, Shape{s.N, s.Co});
    TensorView bv = make_view(bias.data(), DType::f32, Shape{s.Co});
    TensorView rv = make_view(res.data(), DType::f32, Shape{s.N, s.H, s.W, s.Co});
    TensorView yv = make_view(y.data(), DType::f32, Shape{s.N, s.H, s.W, s.Co});
    cpu::ModConvArgs a;
    a.x = &xv, a.w = &wv, a.s = &svv, a.bias = &bv;
    if (s.C2 > 0) a.x2 = &x2v, a.x2_scale = &x2sv, a.x2_bias = &x2bv;
    if (s.demod) a.d = &dv;
    if (s.residual) a.residual = &rv;
    std::vector<double> ref(y.size());
    for (int64_t n = 0; n < s.N; ++n)
      for (int64_t q = 0; q < s.H * s.W; ++q)
        for (int64_t o = 0; o < s.Co; ++o) {
          double acc = 0;
          for (int64_t c = 0; c < C; ++c) {
            double v;
            if (c < s.C1) {
              v = x[static_cast<size_t>(((s.XN == 1 ? 0 : n) * s.H * s.W + q) * s.C1 + c)];
            } else {
              const double t = 0.7 * x2[static_cast<size_t>((n * s.H * s.W + q) * s.C2 + c - s.C1)] + x2b[c - s.C1];
              v = (t < 0 ? 0.2 * t : t) * M_SQRT2;
            }
            acc += v * sv[n * C + c] * w[c * s.Co + o];
          }
          double v = acc * (s.demod ? d[n * s.Co + o] : 1.0) + bias[o];
          v = v < 0 ? 0.1 * v : v;
          ref[static_cast<size_t>((n * s.H * s.W + q) * s.Co + o)] =
              v + (s.residual ? res[static_cast<size_t>((n * s.H * s.W + q) * s.Co + o)] : 0.0);
        }
    std::vector<unsigned char> ws(cpu::modconv_workspace_bytes(p, Shape{s.N, s.H, s.W, C}, yv.shape, 0));
    cpu::modconv(p, a, yv, ws.data());
    CHECK(max_rel(y, ref) <= 2e-6 * std::sqrt(double(C)) + 1e-6);
  }
}

TEST_CASE("upfirdn2d streaming row sum gives the bits of the cached sum and of the epilogue pass, both ISAs") {
  namespace ud = cpu::upfirdn2d_detail;
  std::mt19937 rng(17);
  using Fn = bool (*)(float*, const float* const*, const float*, int, int64_t, const ud::StreamEpilogue*);
  std::vector<Fn> fns = {ud::isa_base::weighted_sum_stream};
#if GPEN_HAVE_AVX512_KERNELS
  if (cpu::cpu_has_avx512()) fns.push_back(ud::isa_avx512::weighted_sum_stream);
#endif
  const int64_t C = 32;  // a multiple of both vector widths
  const auto sc = rnd(C, rng), bias = rnd(C, rng);
  for (int nt : {1, 3, 4})
    for (int64_t len : {int64_t{0}, int64_t{5}, int64_t{64}, int64_t{7 * C}, int64_t{33 * C + 3}})
      for (int64_t off : {0, 1, 5, 16}) {  // floats from a 64-byte boundary
        CAPTURE(nt);
        CAPTURE(len);
        CAPTURE(off);
        std::vector<std::vector<float>> rows;
        std::vector<const float*> src;
        for (int t = 0; t < nt; ++t) rows.push_back(rnd(static_cast<size_t>(len) + 1, rng));
        for (auto& r : rows) src.push_back(r.data());
        const auto w = rnd(static_cast<size_t>(nt), rng);
        std::vector<float> want(static_cast<size_t>(len) + 1, 7.0f);
        ud::isa_base::weighted_sum(want.data(), src.data(), w.data(), nt, len, false);
        std::vector<float> want_ep = want;
        ud::isa_base::bias_act_rows(want_ep.data(), sc.data(), bias.data(), C, len / C, 1.4f, 0.28f);
        for (Fn fn : fns) {
          alignas(64) static float buf[40 * 32 + 64];
          float* d = buf + off;
          std::fill(buf, buf + sizeof buf / sizeof(float), 7.0f);
          CHECK(fn(d, src.data(), w.data(), nt, len, nullptr));
          CHECK(std::memcmp(d, want.data(), (static_cast<size_t>(len) + 1) * sizeof(float)) == 0);  // d[len] intact
          // With the epilogue: only aligned rows of whole vectors of channels, else nothing written.
          const ud::StreamEpilogue ep{sc.data(), bias.data(), C, 1.4f, 0.28f};
          std::fill(buf, buf + sizeof buf / sizeof(float), 7.0f);
          const bool took = fn(d, src.data(), w.data(), nt, len - len % C, &ep);
          CHECK(took == (off % 16 == 0));
          if (took) CHECK(std::memcmp(d, want_ep.data(), static_cast<size_t>(len - len % C) * sizeof(float)) == 0);
          else CHECK(std::all_of(buf, buf + sizeof buf / sizeof(float), [](float v) { return v == 7.0f; }));
        }
      }
}

TEST_CASE("upfirdn2d with its epilogue fused gives the bits of upfirdn2d then upfirdn2d_epilogue") {
  std::mt19937 rng(13);
  const int64_t N = 2, H = 11, W = 13, C = 37;
  for (int variant = 0; variant < 4; ++variant) {
    CAPTURE(variant);
    UpFirDn2dParams p = gpen_blur_params();
    p.has_out_scale = variant != 1;
    p.has_bias = variant != 2;
    p.act = variant == 3 ? Activation::none() : Activation::scaled_leaky();
    const Shape xs{N, H, W, C}, ys{N, H - 1, W - 1, C};
    auto x = rnd(static_cast<size_t>(xs.numel()), rng);
    auto sc = rnd(static_cast<size_t>(N * C), rng), b = rnd(static_cast<size_t>(C), rng);
    std::vector<float> y0(static_cast<size_t>(ys.numel())), y1(y0.size(), NAN);
    TensorView xv = make_view(x.data(), DType::f32, xs), sv = make_view(sc.data(), DType::f32, Shape{N, C}),
               bv = make_view(b.data(), DType::f32, Shape{C});
    const TensorView* s_ptr = p.has_out_scale ? &sv : nullptr;
    const TensorView* b_ptr = p.has_bias ? &bv : nullptr;
    std::vector<unsigned char> ws(cpu::upfirdn2d_workspace_bytes(p, xs, ys, 0));
    TensorView y0v = make_view(y0.data(), DType::f32, ys), y1v = make_view(y1.data(), DType::f32, ys);
    cpu::upfirdn2d(p, xv, y0v, ws.data());
    cpu::upfirdn2d_epilogue(p, s_ptr, b_ptr, y0v);
    cpu::upfirdn2d_act(p, xv, s_ptr, b_ptr, y1v, ws.data());
    CHECK(std::memcmp(y0.data(), y1.data(), y0.size() * sizeof(float)) == 0);
  }
  // Bad input still fails with the unfused path's error.
  UpFirDn2dParams p;
  p.kh = p.kw = 1;
  p.kernel = {1.0f};
  p.has_bias = true;
  std::vector<float> x(8), y(8), b(3);
  TensorView xv = make_view(x.data(), DType::f32, Shape{1, 2, 2, 2}), yv = make_view(y.data(), DType::f32, Shape{1, 2, 2, 2}),
             bv = make_view(b.data(), DType::f32, Shape{3});
  std::vector<unsigned char> ws(cpu::upfirdn2d_workspace_bytes(p, xv.shape, yv.shape, 0));
  CHECK_THROWS_AS(cpu::upfirdn2d_act(p, xv, nullptr, &bv, yv, ws.data()), Error);
}
