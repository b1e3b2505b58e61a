// CUDA modconv (tensor-core kernel for f16/bf16, SIMT kernel for f32) against cpu::modconv, on
// small shapes covering: batch 1 and 2, x broadcast from batch 1, the on-the-fly second source
// (scale, bias, activation), demodulation on/off, bias, residual, activation, k = 1 and 3, the
// transposed (up) conv including phases without taps (k = 1), input and output channel slices,
// tile tails, several tiles, and both staging paths (16-byte vectors when every channel count is
// a multiple of 8 (f16/bf16) or 4 (f32) and the views are aligned; element-wise otherwise).
//
// Tolerances, per element (check_modconv). Inputs are rounded to the tested dtype before the CPU
// reference sees them, so the only differences are:
//  - f32 summation order (both accumulate in f32): bounded by ~K u32 sum_k |a_k b_k| in the worst
//    case, tiny in practice; we allow 1e-5 relative to |want| + M (M below);
//  - f16/bf16 only: the tensor-core kernel rounds each modulated input a_k = prologue(x) to the
//    dtype before the product (tensor cores multiply f16/bf16), an error <= u |a_k| per term, so
//    |acc error| <= u * sum_k |a_k| |w_k| (u = 2^-11 for f16, 2^-8 for bf16: unit roundoff).
//    That sum is computed per output by running the CPU op on |a| and |w|; the demodulation and
//    the activation scale it by |d| and the activation's Lipschitz constant. With weights of
//    scale 1/sqrt(K) it is ~sqrt(K) |a|, i.e. the familiar u sqrt(K) bound but exact per element.
//  - f16/bf16 output: one final rounding (one ulp allowed, as in output_tolerance).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops_gemm.h"
#include "kernels/cuda/ops_gpen.h"
#include "tests/cuda_emu/test_util.h"

using namespace gpen;
using cuda_test::make_pair;
using cuda_test::TensorPair;

namespace {

struct Case {
  const char* name;
  int n, xn;  // batch, and batch of x (1: broadcast)
  int h, w, c1, c2, cout, k;
  bool up = false, demod = false, bias = false, residual = false;
  Activation act = Activation::none();
  Activation x2_act = Activation::none();
  int64_t x_parent_c = 0, x_offset_c = 0;  // x as a channel slice when > 0
  int64_t y_parent_c = 0, y_offset_c = 0;  // output as a channel slice when > 0
  bool split = false;                      // expected to split its depth (splitk.cuh)
};

float lipschitz(const Activation& a) { return std::fabs(a.gain) * std::max(1.0f, std::fabs(a.slope)); }

double unit_roundoff(DType dt) {
  if (dt == DType::f16) return std::ldexp(1.0, -11);
  if (dt == DType::bf16) return std::ldexp(1.0, -8);
  return 0.0;
}

double output_ulp(DType dt) {
  if (dt == DType::f16) return std::ldexp(1.0, -10);
  if (dt == DType::bf16) return std::ldexp(1.0, -7);
  return 0.0;
}

void run_case(const Case& c, DType dt) {
  CAPTURE(std::string(c.name));
  CAPTURE(std::string(dtype_name(dt)));
  const int C = c.c1 + c.c2;
  const int ho = c.up ? 2 * (c.h - 1) + c.k : c.h, wo = c.up ? 2 * (c.w - 1) + c.k : c.w;
  const Shape ys{c.n, ho, wo, c.cout};
  const float wscale = 1.0f / std::sqrt(static_cast<float>(c.k * c.k * C));

  auto x = make_pair(Shape{c.xn, c.h, c.w, c.c1}, dt, 11, -1.0f, 1.0f, c.x_parent_c, c.x_offset_c);
  auto x2 = make_pair(Shape{c.n, c.h, c.w, std::max(c.c2, 1)}, dt, 12, -2.0f, 2.0f);
  auto x2_scale = make_pair(Shape{1}, dt, 13, 0.5f, 1.0f);
  auto x2_bias = make_pair(Shape{std::max(c.c2, 1)}, dt, 14, -0.5f, 0.5f);
  auto w = make_pair(Shape{c.k, c.k, C, c.cout}, dt, 15, -wscale, wscale);
  auto s = make_pair(Shape{c.n, C}, dt, 16, -1.5f, 1.5f);
  auto d = make_pair(Shape{c.n, c.cout}, dt, 17, 0.5f, 2.0f);
  auto b = make_pair(Shape{c.cout}, dt, 18, -0.5f, 0.5f);
  auto r = make_pair(ys, dt, 19);
  auto y = make_pair(ys, dt, 20, -1.0f, 1.0f, c.y_parent_c, c.y_offset_c);

  ModConvParams p;
  p.k = c.k, p.up = c.up;
  p.has_x2 = c.c2 > 0, p.x2_act = c.x2_act;
  p.has_demod = c.demod, p.has_bias = c.bias, p.has_residual = c.residual;
  p.act = c.act;

  auto args = [&](auto member) {
    cpu::ModConvArgs ha;
    cuda::ModConvArgs da;
    auto set = [&](const TensorPair& t, bool on, const TensorView*& hp, const TensorView*& dp) {
      hp = on ? &(t.*member) : nullptr;
      dp = on ? &(t.*member) : nullptr;
    };
    set(x, true, ha.x, da.x);
    set(x2, p.has_x2, ha.x2, da.x2);
    set(x2_scale, p.has_x2, ha.x2_scale, da.x2_scale);
    set(x2_bias, p.has_x2, ha.x2_bias, da.x2_bias);
    set(w, true, ha.w, da.w);
    set(s, true, ha.s, da.s);
    set(d, c.demod, ha.d, da.d);
    set(b, c.bias, ha.bias, da.bias);
    set(r, c.residual, ha.residual, da.residual);
    return std::make_pair(ha, da);
  };
  const cpu::ModConvArgs host_args = args(&TensorPair::hv).first;
  const cuda::ModConvArgs dev_args = args(&TensorPair::dv).second;

  const Shape x_cat{c.n, c.h, c.w, C};
  std::vector<unsigned char> ws(cpu::modconv_workspace_bytes(p, x_cat, ys, 0));
  cpu::modconv(p, host_args, y.hv, ws.data());
  // Split-K: [splits][N][Ho][Wo][Cout] f32 partial sums, only for deep layers with few tiles.
  const size_t wsb = cuda::modconv_workspace_bytes(p, x_cat, ys);
  CHECK((wsb > 0) == c.split);
  if (c.split) {
    CHECK(wsb % (static_cast<size_t>(ys.numel()) * 4) == 0);
    CHECK_THROWS_AS(cuda::modconv(p, dev_args, y.dv, nullptr, nullptr), Error);
  }
  cuda_test::DeviceBuffer dws(wsb);
  cuda::modconv(p, dev_args, y.dv, wsb ? dws.get() : nullptr, nullptr);
  const std::vector<float> got = y.fetch();

  // M = sum_k |a_k| |w_k|: the CPU op on the absolute modulated input (prologue applied on the
  // host) and |w|, with unit style and no epilogue.
  std::vector<float> a_abs(static_cast<size_t>(x_cat.numel()));
  for (int n = 0; n < c.n; ++n)
    for (int iy = 0; iy < c.h; ++iy)
      for (int ix = 0; ix < c.w; ++ix)
        for (int ci = 0; ci < C; ++ci) {
          const float sc = s.hv.f32()[n * s.hv.stride(0) + ci];
          float v;
          if (ci < c.c1) {
            const int nx = c.xn == 1 ? 0 : n;
            v = x.hv.f32()[nx * x.hv.stride(0) + iy * x.hv.stride(1) + ix * x.hv.stride(2) + ci] * sc;
          } else {
            const int c2 = ci - c.c1;
            const float t = x2.hv.f32()[((int64_t{n} * c.h + iy) * c.w + ix) * c.c2 + c2] * x2_scale.host[0] +
                            x2_bias.host[c2];
            v = c.x2_act(t) * sc;
          }
          a_abs[((int64_t{n} * c.h + iy) * c.w + ix) * C + ci] = std::fabs(v);
        }
  std::vector<float> w_abs(w.host.size()), ones(static_cast<size_t>(c.n) * C, 1.0f),
      mag(static_cast<size_t>(ys.numel()));
  for (size_t i = 0; i < w.host.size(); ++i) w_abs[i] = std::fabs(w.host[i]);
  ModConvParams pm;
  pm.k = c.k, pm.up = c.up;
  const TensorView av = make_view(a_abs.data(), DType::f32, x_cat), wv = make_view(w_abs.data(), DType::f32, w.shape),
                   sv = make_view(ones.data(), DType::f32, s.shape), mv = make_view(mag.data(), DType::f32, ys);
  cpu::ModConvArgs ma;
  ma.x = &av, ma.w = &wv, ma.s = &sv;
  std::vector<unsigned char> ws2(cpu::modconv_workspace_bytes(pm, x_cat, ys, 0));
  cpu::modconv(pm, ma, mv, ws2.data());

  // Compare the whole parent of y: elements outside the slice must be untouched.
  const int64_t pc = c.y_parent_c > 0 ? c.y_parent_c : c.cout, off = c.y_parent_c > 0 ? c.y_offset_c : 0;
  const double u = unit_roundoff(dt), ulp = output_ulp(dt), lip = lipschitz(c.act);
  REQUIRE(got.size() == y.host.size());
  size_t bad = 0, worst = 0;
  double worst_excess = -INFINITY;
  for (size_t e = 0; e < got.size(); ++e) {
    const int64_t cp = static_cast<int64_t>(e) % pc, pixel = static_cast<int64_t>(e) / pc;
    double m = 0.0;
    if (cp >= off && cp < off + c.cout) {
      const int64_t co = cp - off, n = pixel / (int64_t{ho} * wo);
      const double dn = c.demod ? std::fabs(d.host[n * c.cout + co]) : 1.0;
      m = mag[pixel * c.cout + co] * dn * lip;
    }
    const double want = y.host[e];
    const double allowed = 1e-6 + 1e-5 * (std::fabs(want) + m) + u * m + ulp * std::fabs(want);
    const double err = std::isnan(got[e]) ? INFINITY : std::fabs(got[e] - want);
    if (err > allowed) ++bad;
    if (err - allowed > worst_excess) worst_excess = err - allowed, worst = e;
  }
  INFO(std::string(c.name) << " " << std::string(dtype_name(dt)) << ": " << bad << " of " << got.size() << " out of tolerance; worst at "
              << worst << ": got " << got[worst] << ", want " << y.host[worst]);
  CHECK(bad == 0);
}

const Activation kLrelu = Activation::scaled_leaky();

// Channel counts that are multiples of 8 take the vector staging path (all dtypes), others the
// element-wise one.
const Case kCases[] = {
    // A StyledConv: x2 = the encoder feature with scale, bias and scaled leaky relu; demod, bias, act.
    {"3x3 x2 + demod + bias + act (vector path)", 2, 2, 5, 7, 8, 8, 24, 3, false, true, true, false, kLrelu, kLrelu},
    {"3x3 odd channels, x2 + residual (element path)", 2, 2, 4, 3, 5, 3, 11, 3, false, true, true, true, kLrelu,
     Activation::leaky(0.1f)},
    // The decoder's first conv: the constant input (batch 1) broadcast over the batch.
    {"3x3 x broadcast from batch 1", 2, 1, 4, 4, 8, 8, 16, 3, false, true, true, false, kLrelu, kLrelu},
    {"3x3 x broadcast, odd channels", 2, 1, 3, 4, 6, 0, 7, 3, false, true, false, false, Activation::relu()},
    // ToRGB: 1x1, no demod, bias and the skip as residual, into a channel slice.
    {"1x1 ToRGB into a channel slice", 2, 2, 6, 5, 16, 16, 3, 1, false, false, true, true, Activation::none(), kLrelu,
     0, 0, 8, 2},
    {"1x1 vector path into an aligned slice", 1, 1, 5, 6, 8, 0, 8, 1, false, false, true, false, kLrelu,
     Activation::none(), 0, 0, 24, 8},
    // Two pixel tiles (144 > 128) and two channel tiles (72 > 64); depth 144 = 4.5 steps of 32.
    {"3x3 several tiles", 1, 1, 12, 12, 8, 8, 72, 3, false, true, true, true, kLrelu, kLrelu},
    // Inputs as channel slices: aligned (vector path) and misaligned (element path).
    {"x as an aligned channel slice", 1, 1, 4, 5, 8, 8, 8, 3, false, true, false, false, kLrelu, kLrelu, 24, 8},
    {"x as a misaligned channel slice", 2, 2, 4, 5, 8, 0, 8, 3, false, false, true, false, kLrelu, kLrelu, 16, 3},
    // Transposed conv (up): [N, 2H + 1, 2W + 1, Cout], no epilogue.
    {"up 3x3 with x2 (vector path)", 2, 2, 3, 4, 8, 8, 16, 3, true, false, false, false, Activation::none(), kLrelu},
    {"up 3x3 odd channels, x broadcast", 2, 1, 2, 3, 3, 0, 5, 3, true},
    // Phase (0, 0) has 13 x 13 = 169 outputs: two pixel tiles.
    {"up 3x3 several tiles", 1, 1, 12, 12, 8, 0, 8, 3, true},
    // k = 1: the phases with an odd coordinate have no taps and are zero.
    {"up 1x1", 1, 1, 3, 3, 4, 0, 5, 1, true},
    // Split-K (GPEN's 4x4 .. 16x16 layers: one tile, deep): depth 9 x 64 = 576 in chunks of 256,
    // 256 and 64, the whole epilogue, into a channel slice.
    {"split-K 3x3 x2 + demod + residual (vector path)", 1, 1, 4, 4, 32, 32, 24, 3, false, true, true, true, kLrelu,
     kLrelu, 0, 0, 40, 8, true},
    // Depth 9 x 36 = 324 in chunks of 256 and 68, element staging, x broadcast over the batch.
    {"split-K odd channels, x broadcast (element path)", 2, 1, 3, 3, 29, 7, 10, 3, false, true, true, false, kLrelu,
     Activation::leaky(0.1f), 0, 0, 0, 0, true},
    // Up: phase depths 256, 128, 128, 64 in chunks of 128: the second chunk of the three smaller
    // phases is empty, and must still contribute its zeros.
    {"split-K up 3x3, empty chunks", 1, 1, 3, 3, 64, 0, 16, 3, true, false, false, false, Activation::none(),
     Activation::none(), 0, 0, 0, 0, true},
};

}  // namespace

// f16 / bf16 with both GEMM families (kernels/cuda/ops_gemm.h): mma.sync (the default; the
// element-path shapes run on WMMA) and the WMMA reference kernel.
TEST_CASE("cuda modconv matches the CPU op (f32, f16, bf16, mma and WMMA)") {
  for (const Case& c : kCases) run_case(c, DType::f32);
  for (cuda::GemmFamily f : {cuda::GemmFamily::mma, cuda::GemmFamily::wmma}) {
    cuda::set_gemm_family(f);
    CAPTURE(std::string(cuda::gemm_family_name(f)));
    for (const Case& c : kCases)
      for (DType dt : {DType::f16, DType::bf16}) run_case(c, dt);
  }
  cuda::set_gemm_family(cuda::GemmFamily::mma);
}

TEST_CASE("cuda modconv rejects bad arguments") {
  const DType dt = DType::f32;
  auto x = make_pair(Shape{1, 4, 4, 8}, dt, 1);
  auto w = make_pair(Shape{3, 3, 8, 8}, dt, 2);
  auto s = make_pair(Shape{1, 8}, dt, 3);
  auto y = make_pair(Shape{1, 4, 4, 8}, dt, 4);
  ModConvParams p;
  cuda::ModConvArgs a;
  a.x = &x.dv, a.w = &w.dv, a.s = &s.dv;
  cuda::modconv(p, a, y.dv, nullptr, nullptr);  // well-formed: no throw
  {
    auto bad_y = make_pair(Shape{1, 5, 4, 8}, dt, 5);
    CHECK_THROWS_AS(cuda::modconv(p, a, bad_y.dv, nullptr, nullptr), Error);
  }
  {
    ModConvParams pd = p;
    pd.has_demod = true;  // demod promised, not given
    CHECK_THROWS_AS(cuda::modconv(pd, a, y.dv, nullptr, nullptr), Error);
  }
  {
    auto h = make_pair(Shape{3, 3, 8, 8}, DType::f16, 6);
    cuda::ModConvArgs b = a;
    b.w = &h.dv;  // mixed dtypes
    CHECK_THROWS_AS(cuda::modconv(p, b, y.dv, nullptr, nullptr), Error);
  }
  {
    ModConvParams pu = p;
    pu.up = true;
    pu.act = Activation::scaled_leaky();  // the up conv has no epilogue
    auto yu = make_pair(Shape{1, 9, 9, 8}, dt, 7);
    CHECK_THROWS_AS(cuda::modconv(pu, a, yu.dv, nullptr, nullptr), Error);
  }
  {
    ModConvParams pk = p;
    pk.k = 9;
    CHECK_THROWS_AS(cuda::modconv_workspace_bytes(pk, Shape{1, 4, 4, 8}, Shape{1, 4, 4, 8}), Error);
  }
}
