// The per-ISA copies of conv2d's epilogue rows, direct-conv tiles and depthwise 3x3 tiles
// (kernels/cpu/conv2d_isa.h), called directly so that both are checked on a machine with
// AVX-512 whatever GPEN_CPU_ISA says. Both copies do the same arithmetic per element in the same
// order, so they must agree to the bit; the AVX2 copy must also match a double-precision
// reference to fp32 rounding (the conv2d paths themselves are checked against naive convs on
// both ISA paths by test_cpu_conv2d_fast).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/conv2d_isa.h"
#include "kernels/cpu/isa.h"

using namespace gpen;
using namespace gpen::cpu::detail;

namespace {

std::vector<float> random_vec(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

double act_ref(double v, double slope, double gain) { return gain * (std::max(v, 0.0) + slope * std::min(v, 0.0)); }

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

bool avx512_here() {
#if GPEN_HAVE_AVX512_KERNELS
  return cpu::cpu_has_avx512();
#else
  return false;
#endif
}

// A conv of NHWC x [1, H, W, Cin] with HWIO weight packed [K][Cp] through one copy's direct_row.
struct DirectCase {
  int64_t H, W, Cin, Co;
  int k, s, pad;
  bool bias, res;
  float slope, gain;
};

template <class RowFn>
std::vector<float> run_direct(const DirectCase& c, const std::vector<float>& x, const std::vector<float>& wk,
                              const std::vector<float>& b, const std::vector<float>& r0, RowFn row_fn, bool inplace) {
  const int64_t Ho = (c.H + 2 * c.pad - c.k) / c.s + 1, Wo = (c.W + 2 * c.pad - c.k) / c.s + 1;
  const int64_t Cp = (c.Co + 7) / 8 * 8, K = int64_t{c.k} * c.k * c.Cin;
  std::vector<float> wp(static_cast<size_t>(K * Cp), 0.0f), bp(static_cast<size_t>(Cp), 0.0f);
  for (int64_t kk = 0; kk < K; ++kk)
    for (int64_t co = 0; co < c.Co; ++co) wp[kk * Cp + co] = wk[kk * c.Co + co];
  for (int64_t co = 0; co < c.Co; ++co) bp[co] = b[co];
  std::vector<float> y = inplace ? r0 : std::vector<float>(static_cast<size_t>(Ho * Wo * c.Co), -7.0f);
  Dc d;
  d.x = x.data(), d.xs0 = c.H * c.W * c.Cin, d.xs1 = c.W * c.Cin, d.xs2 = c.Cin, d.xcs = 1;
  d.wp = wp.data(), d.bp = c.bias ? bp.data() : nullptr;
  d.o.y = y.data(), d.o.ys0 = Ho * Wo * c.Co, d.o.ys1 = Wo * c.Co, d.o.ys2 = c.Co, d.o.ys3 = 1;
  if (c.res) {
    d.o.res = inplace ? y.data() : r0.data();
    d.o.rs0 = d.o.ys0, d.o.rs1 = d.o.ys1, d.o.rs2 = d.o.ys2, d.o.rs3 = 1;
  }
  d.o.slope = c.slope, d.o.gain = c.gain;
  d.H = c.H, d.W = c.W, d.Cin = c.Cin, d.Ho = Ho, d.Wo = Wo, d.Co = c.Co, d.Cp = Cp;
  d.kh = d.kw = c.k, d.sh = d.sw = c.s, d.pt = d.pl = c.pad;
  for (int64_t oy = 0; oy < Ho; ++oy) row_fn(d, true, 0, oy);
  return y;
}

}  // namespace

TEST_CASE("conv2d epilogue rows: both ISA copies give the same bits and the reference") {
  std::mt19937 rng(11);
  const bool wide = avx512_here();
  for (int64_t nc : {1, 7, 8, 15, 16, 24, 33, 64, 256, 257}) {
    for (int mode = 0; mode < 4; ++mode) {
      const bool has_bias = mode & 1, has_res = mode & 2;
      CAPTURE(nc);
      CAPTURE(mode);
      const auto src = random_vec(static_cast<size_t>(nc), rng), bias = random_vec(static_cast<size_t>(nc), rng);
      const auto res = random_vec(static_cast<size_t>(nc), rng);
      std::vector<float> y0(static_cast<size_t>(nc)), y1(static_cast<size_t>(nc));
      isa_base::epilogue_row(y0.data(), src.data(), has_bias ? bias.data() : nullptr, has_res ? res.data() : nullptr,
                             nc, 0.2f, 1.4142135f);
      for (int64_t c = 0; c < nc; ++c) {
        const double ref = act_ref(double(src[c]) + (has_bias ? bias[c] : 0.0), 0.2, 1.4142135) + (has_res ? res[c] : 0.0);
        CHECK(std::fabs(y0[c] - ref) <= 4e-7 * std::max(1.0, std::fabs(ref)));
      }
      if (has_res) {  // the residual is the output itself
        auto yi = res;
        isa_base::epilogue_row(yi.data(), src.data(), has_bias ? bias.data() : nullptr, yi.data(), nc, 0.2f,
                               1.4142135f);
        CHECK(same_bits(yi, y0));
      }
#if GPEN_HAVE_AVX512_KERNELS
      if (wide) {
        isa_avx512::epilogue_row(y1.data(), src.data(), has_bias ? bias.data() : nullptr,
                                 has_res ? res.data() : nullptr, nc, 0.2f, 1.4142135f);
        CHECK(same_bits(y0, y1));
        if (has_res) {
          auto yi = res;
          isa_avx512::epilogue_row(yi.data(), src.data(), has_bias ? bias.data() : nullptr, yi.data(), nc, 0.2f,
                                   1.4142135f);
          CHECK(same_bits(yi, y0));
        }
      }
#endif
    }
  }
}

TEST_CASE("conv2d direct tiles: both ISA copies give the same bits and the reference") {
  std::mt19937 rng(12);
  const bool wide = avx512_here();
  // The stem (7x7 s2, 3 -> 64), narrow 1x1 / 3x3 convs with channel tails of 8 and less.
  const DirectCase cases[] = {{23, 29, 3, 64, 7, 2, 3, true, true, 0.0f, 1.0f},
                              {9, 13, 16, 24, 1, 1, 0, true, false, 0.1f, 1.0f},
                              {11, 10, 4, 8, 3, 1, 1, false, true, 1.0f, 1.0f},
                              {8, 17, 2, 40, 3, 2, 1, true, true, 0.2f, 1.4142135f},
                              {6, 7, 3, 5, 3, 1, 1, true, false, 0.0f, 1.0f}};
  for (const DirectCase& c : cases) {
    CAPTURE(c.Co);
    CAPTURE(c.k);
    const int64_t Ho = (c.H + 2 * c.pad - c.k) / c.s + 1, Wo = (c.W + 2 * c.pad - c.k) / c.s + 1;
    const auto x = random_vec(static_cast<size_t>(c.H * c.W * c.Cin), rng);
    const auto wk = random_vec(static_cast<size_t>(c.k * c.k * c.Cin * c.Co), rng);
    const auto b = random_vec(static_cast<size_t>(c.Co), rng);
    const auto r0 = random_vec(static_cast<size_t>(Ho * Wo * c.Co), rng);
    const auto y0 = run_direct(c, x, wk, b, r0, isa_base::direct_row, false);
    double err = 0;
    for (int64_t oy = 0; oy < Ho; ++oy)
      for (int64_t ox = 0; ox < Wo; ++ox)
        for (int64_t co = 0; co < c.Co; ++co) {
          double acc = c.bias ? b[co] : 0.0, mag = std::fabs(acc);
          for (int ky = 0; ky < c.k; ++ky)
            for (int kx = 0; kx < c.k; ++kx) {
              const int64_t iy = oy * c.s - c.pad + ky, ix = ox * c.s - c.pad + kx;
              if (iy < 0 || iy >= c.H || ix < 0 || ix >= c.W) continue;
              for (int64_t ci = 0; ci < c.Cin; ++ci) {
                const double t = double(x[(iy * c.W + ix) * c.Cin + ci]) * wk[((ky * c.k + kx) * c.Cin + ci) * c.Co + co];
                acc += t, mag += std::fabs(t);
              }
            }
          const size_t i = static_cast<size_t>((oy * Wo + ox) * c.Co + co);
          const double ref = act_ref(acc, c.slope, c.gain) + (c.res ? r0[i] : 0.0);
          // fp32 sums of up to 147 terms: a few ulps of the sum of magnitudes.
          err = std::max(err, std::fabs(y0[i] - ref) / (c.gain * mag + 1.0));
        }
    CHECK(err <= 2e-6);
    if (c.res) CHECK(same_bits(run_direct(c, x, wk, b, r0, isa_base::direct_row, true), y0));
#if GPEN_HAVE_AVX512_KERNELS
    if (wide) {
      CHECK(same_bits(run_direct(c, x, wk, b, r0, isa_avx512::direct_row, false), y0));
      if (c.res) CHECK(same_bits(run_direct(c, x, wk, b, r0, isa_avx512::direct_row, true), y0));
    }
#endif
  }
}

TEST_CASE("conv2d depthwise 3x3 tiles: both ISA copies give the same bits and the reference") {
  std::mt19937 rng(13);
  const bool wide_isa = avx512_here();
  struct Case {
    int64_t H, W, C;
    int s;
    bool bias, res;
  };
  // Channel counts with tails of 16, 8 and less than 8 lanes; both tile shapes (C >= 128, stride 2).
  const Case cases[] = {{9, 11, 8, 1, true, true},   {10, 9, 24, 1, true, false}, {7, 13, 40, 2, false, true},
                        {6, 7, 136, 1, true, true},  {5, 9, 53, 1, true, true},   {8, 8, 64, 2, true, false}};
  for (const Case& c : cases) {
    CAPTURE(c.C);
    CAPTURE(c.s);
    const int64_t Ho = (c.H + 2 - 3) / c.s + 1, Wo = (c.W + 2 - 3) / c.s + 1;
    const auto x = random_vec(static_cast<size_t>(c.H * c.W * c.C), rng);
    const auto w = random_vec(static_cast<size_t>(9 * c.C), rng);
    const auto b = random_vec(static_cast<size_t>(c.C), rng);
    const auto r0 = random_vec(static_cast<size_t>(Ho * Wo * c.C), rng);
    auto run = [&](auto row_fn) {
      std::vector<float> y(static_cast<size_t>(Ho * Wo * c.C), -7.0f);
      Dw d;
      d.x = x.data(), d.xs0 = c.H * c.W * c.C, d.xs1 = c.W * c.C, d.xs2 = c.C;
      d.w = w.data(), d.ws0 = 3 * c.C, d.ws1 = c.C;
      d.bias = c.bias ? b.data() : nullptr, d.bs = 1;
      d.o.y = y.data(), d.o.ys0 = Ho * Wo * c.C, d.o.ys1 = Wo * c.C, d.o.ys2 = c.C, d.o.ys3 = 1;
      if (c.res) d.o.res = r0.data(), d.o.rs0 = d.o.ys0, d.o.rs1 = d.o.ys1, d.o.rs2 = d.o.ys2, d.o.rs3 = 1;
      d.o.slope = 0.1f, d.o.gain = 1.0f;
      d.H = c.H, d.W = c.W, d.C = c.C, d.Ho = Ho, d.Wo = Wo;
      d.sh = d.sw = c.s, d.pt = d.pl = 1;
      const bool wide = c.C >= 128 || c.s > 1;
      for (int64_t oy = 0; oy < Ho; ++oy) row_fn(d, wide, 0, oy);
      return y;
    };
    const auto y0 = run(isa_base::depthwise3x3_row);
    double err = 0;
    for (int64_t oy = 0; oy < Ho; ++oy)
      for (int64_t ox = 0; ox < Wo; ++ox)
        for (int64_t ch = 0; ch < c.C; ++ch) {
          double acc = c.bias ? b[ch] : 0.0, mag = std::fabs(acc);
          for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx) {
              const int64_t iy = oy * c.s - 1 + ky, ix = ox * c.s - 1 + kx;
              if (iy < 0 || iy >= c.H || ix < 0 || ix >= c.W) continue;
              const double t = double(x[(iy * c.W + ix) * c.C + ch]) * w[(ky * 3 + kx) * c.C + ch];
              acc += t, mag += std::fabs(t);
            }
          const size_t i = static_cast<size_t>((oy * Wo + ox) * c.C + ch);
          const double ref = act_ref(acc, 0.1, 1.0) + (c.res ? r0[i] : 0.0);
          err = std::max(err, std::fabs(y0[i] - ref) / (mag + 1.0));
        }
    CHECK(err <= 1e-6);
#if GPEN_HAVE_AVX512_KERNELS
    if (wide_isa) CHECK(same_bits(run(isa_avx512::depthwise3x3_row), y0));
#endif
    (void)wide_isa;
  }
}
