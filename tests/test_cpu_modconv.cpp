// CPU GPEN ops (kernels/cpu/latent.cpp, modconv.cpp, epilogue.cpp) against
//  - fixtures of the literal official formulation (tests/reference/make_gpen_op_fixtures.py,
//    computed in float64: per-sample modulated weights, grouped conv / conv_transpose2d + blur,
//    noise concat and fused leaky relu), and
//  - an in-test float64 reference of the decomposed form on random shapes that exercise the
//    tiling (channel chunks past the K block, output-channel tails, many tasks, strided views).
//
// Tolerances. Inputs and weights are O(1) and outputs are demodulated to O(1). The kernel rounds
// the prologue (x * s, act2) once and accumulates K = k*k*Cin products in float32 in K blocks of
// at most 256, so its error is a few ulps of the sum of |products| ("mass"): we allow
// 1e-6 * mass + 1e-6 against the float64 reference (float32 unit roundoff is 6e-8, so this is
// ~16 ulps of the mass; a wrong tap, channel or sample moves outputs by O(mass / sqrt(K))).
// Against the stored fixtures (mass not stored) we allow 2e-5 absolute + 2e-5 relative: the
// fixtures' K is at most 288 and their outputs are O(1).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/photo/npy.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/winograd.h"

using namespace gpen;

namespace {

std::string fixture(const std::string& name) { return std::string(GPEN_FIXTURE_DIR) + "/gpen_ops/" + name + ".npy"; }

// A dense f32 tensor owning its memory.
struct Buf {
  Shape shape;
  std::vector<float> v;
  Buf() = default;
  explicit Buf(const Shape& s, float fill = 0.0f) : shape(s), v(static_cast<size_t>(s.numel()), fill) {}
  TensorView view() { return make_view(v.data(), DType::f32, shape); }
};

Buf load(const std::string& name) {
  npy::Array a = npy::load(fixture(name));
  Buf b;
  b.shape = a.engine_shape();
  b.v = a.to_f32();
  return b;
}

// A channel slice [c0, c0 + c) of an NHWC buffer with `ctot` channels, filled from `src`.
struct Slice {
  std::vector<float> mem;
  TensorView view;
  Slice(const Shape& s, int64_t ctot, int64_t c0, const std::vector<float>* src = nullptr, float fill = 0.0f) {
    Shape parent = s;
    parent[3] = ctot;
    mem.assign(static_cast<size_t>(parent.numel()), fill);
    view = make_view(mem.data() + c0, DType::f32, s);
    view.strides = dense_strides(parent);
    if (src)
      for (int64_t p = 0; p < s.numel() / s[3]; ++p)
        for (int64_t c = 0; c < s[3]; ++c) mem[p * ctot + c0 + c] = (*src)[p * s[3] + c];
  }
  float at(int64_t p, int64_t c) const { return mem[p * view.stride(2) + (view.f32() - mem.data()) + c]; }
};

struct Workspace {
  std::vector<unsigned char> mem;
  void* get(size_t bytes) {
    mem.assign(bytes + 1, 0xAB);  // +1: a zero-byte request still gets a valid pointer
    return mem.data();
  }
};

void check_close(const std::vector<float>& got, const std::vector<float>& want, double atol, double rtol,
                 const std::string& what) {
  REQUIRE(got.size() == want.size());
  double worst = 0.0;
  size_t worst_i = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(double(got[i]) - double(want[i]));
    const double excess = err - (atol + rtol * std::abs(double(want[i])));
    if (excess > worst || !std::isfinite(got[i])) worst = std::isfinite(got[i]) ? excess : 1e30, worst_i = i;
  }
  INFO(what << ": worst at " << worst_i << ": got " << got[worst_i] << " want " << want[worst_i]);
  CHECK(worst <= 0.0);
}

float scaled_leaky(float v) { return Activation::scaled_leaky()(v); }

// ---- float64 reference of the decomposed modconv, independent of the kernel's tiling.
struct RefCase {
  ModConvParams p;
  int64_t N = 1, XN = 1, H = 1, W = 1, C1 = 1, C2 = 0, Co = 1;
  Buf x, x2, x2s, x2b, w, s, d, bias, residual;
};

struct RefOut {
  std::vector<double> y;     // expected output
  std::vector<double> mass;  // sum of |products| (+ |bias|, |residual|) per output, for the tolerance
};

RefOut reference(const RefCase& c) {
  const int k = c.p.k;
  const int64_t C = c.C1 + c.C2;
  const int64_t Ho = c.p.up ? 2 * (c.H - 1) + k : c.H, Wo = c.p.up ? 2 * (c.W - 1) + k : c.W;
  auto xin = [&](int64_t n, int64_t h, int64_t w, int64_t ch) -> double {
    double v;
    if (ch < c.C1) {
      const int64_t nx = c.XN == 1 ? 0 : n;
      v = c.x.v[((nx * c.H + h) * c.W + w) * c.C1 + ch];
    } else {
      const int64_t j = ch - c.C1;
      const double t = double(c.x2.v[((n * c.H + h) * c.W + w) * c.C2 + j]) * c.x2s.v[0] + c.x2b.v[j];
      v = c.p.x2_act.gain * (t >= 0 ? t : c.p.x2_act.slope * t);
    }
    return v * c.s.v[n * C + ch];
  };
  auto wt = [&](int ky, int kx, int64_t i, int64_t o) { return double(c.w.v[((ky * k + kx) * C + i) * c.Co + o]); };
  RefOut r;
  r.y.assign(static_cast<size_t>(c.N * Ho * Wo * c.Co), 0.0);
  r.mass.assign(r.y.size(), 0.0);
  auto idx = [&](int64_t n, int64_t h, int64_t w, int64_t o) {
    return static_cast<size_t>(((n * Ho + h) * Wo + w) * c.Co + o);
  };
  if (c.p.up) {
    for (int64_t n = 0; n < c.N; ++n)
      for (int64_t h = 0; h < c.H; ++h)
        for (int64_t w = 0; w < c.W; ++w)
          for (int64_t i = 0; i < C; ++i) {
            const double v = xin(n, h, w, i);
            for (int ky = 0; ky < k; ++ky)
              for (int kx = 0; kx < k; ++kx)
                for (int64_t o = 0; o < c.Co; ++o) {
                  r.y[idx(n, 2 * h + ky, 2 * w + kx, o)] += v * wt(ky, kx, i, o);
                  r.mass[idx(n, 2 * h + ky, 2 * w + kx, o)] += std::abs(v * wt(ky, kx, i, o));
                }
          }
    return r;
  }
  const int pad = k / 2;
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t h = 0; h < c.H; ++h)
      for (int64_t w = 0; w < c.W; ++w)
        for (int64_t o = 0; o < c.Co; ++o) {
          double acc = 0.0, mass = 0.0;
          for (int ky = 0; ky < k; ++ky)
            for (int kx = 0; kx < k; ++kx) {
              const int64_t ih = h + ky - pad, iw = w + kx - pad;
              if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) continue;
              for (int64_t i = 0; i < C; ++i) {
                const double t = xin(n, ih, iw, i) * wt(ky, kx, i, o);
                acc += t;
                mass += std::abs(t);
              }
            }
          double dd = 1.0;
          if (c.p.has_demod) dd = c.d.v[n * c.Co + o];
          double v = acc * dd;
          mass *= std::abs(dd) * c.p.act.gain;
          if (c.p.has_bias) v += c.bias.v[o], mass += std::abs(c.bias.v[o]) * c.p.act.gain;
          v = c.p.act.gain * (v >= 0 ? v : c.p.act.slope * v);
          if (c.p.has_residual) {
            v += c.residual.v[idx(n, h, w, o)];
            mass += std::abs(c.residual.v[idx(n, h, w, o)]);
          }
          r.y[idx(n, h, w, o)] = v;
          r.mass[idx(n, h, w, o)] = mass;
        }
  return r;
}

Buf random_buf(std::mt19937& rng, const Shape& s, float lo, float hi) {
  Buf b(s);
  std::uniform_real_distribution<float> u(lo, hi);
  for (float& v : b.v) v = u(rng);
  return b;
}

RefCase random_case(std::mt19937& rng, const ModConvParams& p0, int64_t N, int64_t XN, int64_t H, int64_t W, int64_t C1,
                    int64_t C2, int64_t Co) {
  RefCase c;
  c.p = p0;
  c.p.has_x2 = C2 > 0;
  c.N = N, c.XN = XN, c.H = H, c.W = W, c.C1 = C1, c.C2 = C2, c.Co = Co;
  const int64_t C = C1 + C2;
  const float ws = 1.0f / std::sqrt(float(C * p0.k * p0.k));
  c.x = random_buf(rng, Shape{XN, H, W, C1}, -1.0f, 1.0f);
  if (C2) {
    c.x2 = random_buf(rng, Shape{N, H, W, C2}, -1.0f, 1.0f);
    c.x2s = random_buf(rng, Shape{1}, 0.3f, 1.2f);
    c.x2b = random_buf(rng, Shape{C2}, -0.3f, 0.3f);
  }
  c.w = random_buf(rng, Shape{p0.k, p0.k, C, Co}, -1.7f * ws, 1.7f * ws);
  c.s = random_buf(rng, Shape{N, C}, 0.5f, 1.5f);
  if (p0.has_demod) c.d = random_buf(rng, Shape{N, Co}, 0.5f, 2.0f);
  if (p0.has_bias) c.bias = random_buf(rng, Shape{Co}, -0.5f, 0.5f);
  const int64_t Ho = p0.up ? 2 * (H - 1) + p0.k : H, Wo = p0.up ? 2 * (W - 1) + p0.k : W;
  if (p0.has_residual) c.residual = random_buf(rng, Shape{N, Ho, Wo, Co}, -1.0f, 1.0f);
  return c;
}

// The weight as a view: dense HWIO (layout 0), an output-channel slice of a wider HWIO buffer
// (1), or HWOI storage seen through HWIO strides (2, channel stride != 1).
struct WeightView {
  std::vector<float> mem;
  TensorView view;
  WeightView(const Buf& w, int layout) {
    const int64_t k = w.shape[0], C = w.shape[2], Co = w.shape[3];
    const int64_t cw = layout == 1 ? Co + 3 : Co;
    mem.assign(static_cast<size_t>(k * k * C * cw), -7.0f);
    view = make_view(mem.data(), DType::f32, w.shape);
    if (layout == 1) view.strides = {k * C * cw, C * cw, cw, 1};
    if (layout == 2) view.strides = {k * C * Co, C * Co, 1, C};
    for (int64_t t = 0; t < k * k; ++t)
      for (int64_t i = 0; i < C; ++i)
        for (int64_t o = 0; o < Co; ++o)
          mem[t * view.stride(1) + i * view.stride(2) + o * view.stride(3)] = w.v[(t * C + i) * Co + o];
  }
};

// Runs the kernel on a case, optionally with x and y as channel slices of wider buffers and a
// non-dense weight.
std::vector<float> run_case(RefCase& c, bool strided, int weight_layout = 0) {
  const int64_t Ho = c.p.up ? 2 * (c.H - 1) + c.p.k : c.H, Wo = c.p.up ? 2 * (c.W - 1) + c.p.k : c.W;
  const Shape ys{c.N, Ho, Wo, c.Co};
  Slice xs(c.x.shape, strided ? c.C1 + 5 : c.C1, strided ? 3 : 0, &c.x.v);
  Slice x2s(c.C2 ? c.x2.shape : Shape{1, 1, 1, 1}, strided ? c.C2 + 2 : std::max<int64_t>(c.C2, 1), strided ? 1 : 0,
            c.C2 ? &c.x2.v : nullptr);
  Slice yv(ys, strided ? c.Co + 7 : c.Co, strided ? 4 : 0, nullptr, 1234.5f);
  WeightView wview(c.w, weight_layout);
  TensorView x2sv = c.x2s.view(), x2bv = c.x2b.view(), wv = wview.view, sv = c.s.view(), dv = c.d.view(),
             bv = c.bias.view(), rv = c.residual.view();
  cpu::ModConvArgs a;
  a.x = &xs.view;
  if (c.C2) a.x2 = &x2s.view, a.x2_scale = &x2sv, a.x2_bias = &x2bv;
  a.w = &wv;
  a.s = &sv;
  if (c.p.has_demod) a.d = &dv;
  if (c.p.has_bias) a.bias = &bv;
  if (c.p.has_residual) a.residual = &rv;
  Shape xcat = c.x.shape;
  xcat[3] = c.C1 + c.C2;
  Workspace ws;
  void* wsp = ws.get(cpu::modconv_workspace_bytes(c.p, xcat, ys, cpu::num_threads()));
  cpu::modconv(c.p, a, yv.view, wsp);
  std::vector<float> out(static_cast<size_t>(ys.numel()));
  for (int64_t q = 0; q < ys.numel() / c.Co; ++q)
    for (int64_t o = 0; o < c.Co; ++o) out[q * c.Co + o] = yv.at(q, o);
  if (strided) {  // channels outside the slice are untouched
    const int64_t ctot = c.Co + 7;
    for (int64_t q = 0; q < ys.numel() / c.Co; ++q)
      for (int64_t o = 0; o < ctot; ++o)
        if (o < 4 || o >= 4 + c.Co) REQUIRE(yv.mem[q * ctot + o] == 1234.5f);
  }
  return out;
}

void check_against_reference(RefCase& c, const RefOut& r, bool strided, int weight_layout, const std::string& what) {
  const std::vector<float> got = run_case(c, strided, weight_layout);
  double worst = 0.0;
  size_t wi = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(got[i] - r.y[i]);
    const double tol = 1e-6 * r.mass[i] + 1e-6;
    if (!std::isfinite(got[i]) || err / tol > worst) worst = std::isfinite(got[i]) ? err / tol : 1e30, wi = i;
  }
  INFO(what << ": worst error/tolerance " << worst << " at " << wi << " (got " << got[wi] << ", want " << r.y[wi]
            << ", mass " << r.mass[wi] << ")");
  CHECK(worst <= 1.0);
}

// Runs a fixture layer (styled / const / to_rgb / styled_up) through the engine ops.
struct FixtureLayer {
  Buf x, x2, x2s, x2b, w, s, q, bias, residual, y;
  bool has_x2 = false, has_q = false, has_res = false;
  explicit FixtureLayer(const std::string& name, bool x2, bool q, bool res) : has_x2(x2), has_q(q), has_res(res) {
    x = load(name + ".x");
    if (x2) this->x2 = load(name + ".x2"), x2s = load(name + ".x2_scale"), x2b = load(name + ".x2_bias");
    w = load(name + ".w");
    s = load(name + ".s");
    if (q) this->q = load(name + ".q");
    bias = load(name + ".bias");
    if (res) residual = load(name + ".residual");
    y = load(name + ".y");
  }
  Buf demod() {
    Buf d(Shape{s.shape[0], q.shape[0]});
    TensorView sv = s.view(), qv = q.view(), dv = d.view();
    cpu::demod(DemodParams{}, sv, qv, dv);
    return d;
  }
};

}  // namespace

TEST_CASE("pixel_norm matches PyTorch's PixelNorm, also in place") {
  Buf x = load("pixel_norm.x"), want = load("pixel_norm.y");
  Buf y(x.shape);
  TensorView xv = x.view(), yv = y.view();
  cpu::pixel_norm(PixelNormParams{}, xv, yv);
  // One rounding of x * r with r computed in double: 2 ulps.
  check_close(y.v, want.v, 1e-7, 2.5e-7, "pixel_norm");
  cpu::pixel_norm(PixelNormParams{}, xv, xv);
  check_close(x.v, want.v, 1e-7, 2.5e-7, "pixel_norm in place");
}

TEST_CASE("demod from the Q table equals the literal demodulation of the modulated weight") {
  Buf s = load("demod.s"), q = load("demod.q"), want = load("demod.d");
  Buf d(want.shape);
  TensorView sv = s.view(), qv = q.view(), dv = d.view();
  cpu::demod(DemodParams{}, sv, qv, dv);
  // Accumulated in double; Q is the float32 rounding of a float64 table: a few ulps.
  check_close(d.v, want.v, 0.0, 1e-6, "demod");
  Buf bad(Shape{3, 41});
  TensorView bv = bad.view();
  CHECK_THROWS_AS(cpu::demod(DemodParams{}, sv, qv, bv), Error);
}

TEST_CASE("modconv: StyledConv with noise concat, demod, bias and fused leaky relu") {
  FixtureLayer f("styled", true, true, false);
  Buf d = f.demod();
  for (bool strided : {false, true}) {
    RefCase c;  // reuse run_case's view plumbing with the fixture's numbers
    c.p.k = 3;
    c.p.has_x2 = true;
    c.p.x2_act = Activation::scaled_leaky();
    c.p.has_demod = c.p.has_bias = true;
    c.p.act = Activation::scaled_leaky();
    c.N = f.x2.shape[0], c.XN = f.x.shape[0], c.H = f.x.shape[1], c.W = f.x.shape[2];
    c.C1 = f.x.shape[3], c.C2 = f.x2.shape[3], c.Co = f.w.shape[3];
    c.x = f.x, c.x2 = f.x2, c.x2s = f.x2s, c.x2b = f.x2b, c.w = f.w, c.s = f.s, c.d = d, c.bias = f.bias;
    check_close(run_case(c, strided), f.y.v, 2e-5, 2e-5, strided ? "styled (strided views)" : "styled");
  }
}

TEST_CASE("modconv: batch-1 constant input broadcast over two styles") {
  FixtureLayer f("const", false, true, false);
  Buf d = f.demod();
  RefCase c;
  c.p.k = 3;
  c.p.has_demod = c.p.has_bias = true;
  c.p.act = Activation::scaled_leaky();
  c.N = f.s.shape[0], c.XN = 1, c.H = f.x.shape[1], c.W = f.x.shape[2], c.C1 = f.x.shape[3], c.Co = f.w.shape[3];
  REQUIRE(f.x.shape[0] == 1);
  REQUIRE(c.N == 2);
  c.x = f.x, c.w = f.w, c.s = f.s, c.d = d, c.bias = f.bias;
  check_close(run_case(c, false), f.y.v, 2e-5, 2e-5, "const");
}

TEST_CASE("modconv: ToRGB (1x1, no demod, bias, upsampled skip as residual)") {
  FixtureLayer f("to_rgb", true, false, true);
  RefCase c;
  c.p.k = 1;
  c.p.has_x2 = true;
  c.p.x2_act = Activation::scaled_leaky();
  c.p.has_bias = c.p.has_residual = true;
  c.N = f.x2.shape[0], c.XN = f.x.shape[0], c.H = f.x.shape[1], c.W = f.x.shape[2];
  c.C1 = f.x.shape[3], c.C2 = f.x2.shape[3], c.Co = f.w.shape[3];
  c.x = f.x, c.x2 = f.x2, c.x2s = f.x2s, c.x2b = f.x2b, c.w = f.w, c.s = f.s, c.bias = f.bias, c.residual = f.residual;
  check_close(run_case(c, false), f.y.v, 2e-5, 2e-5, "to_rgb");
  check_close(run_case(c, true), f.y.v, 2e-5, 2e-5, "to_rgb (strided views)");
}

TEST_CASE("modconv up + upfirdn2d blur + epilogue equals the official upsampling StyledConv") {
  FixtureLayer f("styled_up", true, true, false);
  Buf d = f.demod();
  const int64_t N = f.x2.shape[0], H = f.x.shape[1], W = f.x.shape[2], Co = f.w.shape[3];
  ModConvParams p;
  p.k = 3;
  p.up = true;
  p.has_x2 = true;
  p.x2_act = Activation::scaled_leaky();
  TensorView xv = f.x.view(), x2v = f.x2.view(), x2sv = f.x2s.view(), x2bv = f.x2b.view(), wv = f.w.view(),
             sv = f.s.view(), dv = d.view(), bv = f.bias.view();
  cpu::ModConvArgs a;
  a.x = &xv, a.x2 = &x2v, a.x2_scale = &x2sv, a.x2_bias = &x2bv, a.w = &wv, a.s = &sv;
  Buf t(Shape{N, 2 * H + 1, 2 * W + 1, Co}, 1e30f);  // every element must be written
  Shape xcat = f.x.shape;
  xcat[3] += f.x2.shape[3];
  Workspace ws;
  TensorView tv = t.view();
  cpu::modconv(p, a, tv, ws.get(cpu::modconv_workspace_bytes(p, xcat, t.shape, cpu::num_threads())));

  UpFirDn2dParams bl;
  bl.kh = bl.kw = 4;
  bl.pad_x0 = bl.pad_y0 = bl.pad_x1 = bl.pad_y1 = 1;
  const float k1[4] = {1, 3, 3, 1};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) bl.kernel.push_back(k1[i] * k1[j] / 64.0f * 4.0f);
  bl.has_out_scale = bl.has_bias = true;
  bl.act = Activation::scaled_leaky();
  Buf y(Shape{N, 2 * H, 2 * W, Co});
  TensorView yv = y.view();
  Workspace ws2;
  cpu::upfirdn2d(bl, tv, yv, ws2.get(cpu::upfirdn2d_workspace_bytes(bl, t.shape, y.shape, cpu::num_threads())));
  cpu::upfirdn2d_epilogue(bl, &dv, &bv, yv);
  check_close(y.v, f.y.v, 2e-5, 2e-5, "styled_up");
}

TEST_CASE("upfirdn2d_epilogue: scale, bias and activation in place on a strided view") {
  Slice y(Shape{2, 3, 4, 5}, 9, 2, nullptr, 0.0f);
  for (size_t i = 0; i < y.mem.size(); ++i) y.mem[i] = float(int(i % 11) - 5) * 0.25f;
  const std::vector<float> before = y.mem;
  Buf sc(Shape{2, 5}), b(Shape{5});
  for (int i = 0; i < 10; ++i) sc.v[i] = 0.5f + 0.1f * i;
  for (int i = 0; i < 5; ++i) b.v[i] = -0.2f + 0.1f * i;
  UpFirDn2dParams p;
  p.has_out_scale = p.has_bias = true;
  p.act = Activation::scaled_leaky();
  TensorView scv = sc.view(), bv = b.view();
  cpu::upfirdn2d_epilogue(p, &scv, &bv, y.view);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t q = 0; q < 12; ++q)
      for (int64_t c = 0; c < 9; ++c) {
        const size_t i = static_cast<size_t>((n * 12 + q) * 9 + c);
        const float want = (c >= 2 && c < 7) ? scaled_leaky(before[i] * sc.v[n * 5 + c - 2] + b.v[c - 2]) : before[i];
        CHECK(y.mem[i] == doctest::Approx(want).epsilon(1e-6));
      }
  Buf badb(Shape{4});
  TensorView badv = badb.view();
  CHECK_THROWS_AS(cpu::upfirdn2d_epilogue(p, &scv, &badv, y.view), Error);
}

TEST_CASE("modconv agrees with a float64 reference on shapes that stress the tiling") {
  std::mt19937 rng(7);
  struct Shp {
    int k;
    bool up;
    int64_t N, XN, H, W, C1, C2, Co;
    bool demod, bias, act, res;
  };
  const Shp shapes[] = {
      {3, false, 2, 2, 9, 11, 150, 150, 40, true, true, true, false},   // K chunks (C = 300 > 256), Co tail
      {3, false, 1, 1, 9, 200, 8, 8, 16, true, true, true, false},      // wide rows: several tiles per row
      {3, false, 3, 1, 5, 6, 24, 0, 80, true, true, true, true},        // broadcast x, residual, co chunks
      {1, false, 2, 2, 7, 9, 20, 20, 3, false, true, false, true},      // ToRGB-like, Co = 3
      {5, false, 1, 1, 6, 7, 10, 6, 17, true, false, true, false},      // k = 5, no bias
      {3, true, 2, 2, 6, 5, 140, 140, 24, false, false, false, false},  // up with K chunks
      {3, true, 1, 1, 3, 97, 8, 8, 33, false, false, false, false},     // up, wide row, Co tail
      {1, true, 1, 1, 3, 4, 5, 0, 7, false, false, false, false},       // up k = 1: zero phases
      {4, true, 1, 1, 3, 3, 6, 2, 9, false, false, false, false},       // up, even k
      {3, false, 1, 1, 1, 1, 4, 4, 5, true, true, true, false},         // 1x1 image
      // Outputs past kDirectPixels take the packed-weight path: repeat the features there.
      {3, false, 2, 1, 12, 14, 40, 0, 37, true, true, true, true},      // broadcast x, residual, Co tail
      {1, false, 1, 1, 16, 20, 24, 24, 3, false, true, false, true},    // ToRGB-like
      {3, true, 1, 1, 12, 12, 30, 30, 20, false, false, false, false},  // up, Co tail
      {3, true, 2, 2, 8, 8, 300, 0, 16, false, false, false, false},    // up, K chunks
  };
  int i = 0;
  for (const Shp& sh : shapes) {
    ModConvParams p;
    p.k = sh.k;
    p.up = sh.up;
    p.x2_act = Activation::scaled_leaky();
    p.has_demod = sh.demod;
    p.has_bias = sh.bias;
    p.has_residual = sh.res;
    if (sh.act) p.act = Activation::scaled_leaky();
    RefCase c = random_case(rng, p, sh.N, sh.XN, sh.H, sh.W, sh.C1, sh.C2, sh.Co);
    const RefOut r = reference(c);
    for (int threads : {1, 2}) {
      cpu::set_num_threads(threads);
      check_against_reference(c, r, i % 2 == 1, (i + threads) % 3,
                              "shape #" + std::to_string(i) + " threads " + std::to_string(threads));
    }
    ++i;
  }
  cpu::set_num_threads(0);
}

TEST_CASE("modconv rejects inconsistent inputs with gpen::Error") {
  std::mt19937 rng(3);
  ModConvParams p;
  p.has_demod = true;
  RefCase c = random_case(rng, p, 2, 2, 4, 4, 6, 0, 5);
  TensorView xv = c.x.view(), wv = c.w.view(), sv = c.s.view(), dv = c.d.view();
  Buf y(Shape{2, 4, 4, 5});
  TensorView yv = y.view();
  Workspace ws;
  void* wsp = ws.get(cpu::modconv_workspace_bytes(p, c.x.shape, y.shape, cpu::num_threads()));
  cpu::ModConvArgs a;
  a.x = &xv, a.w = &wv, a.s = &sv, a.d = &dv;
  CHECK_NOTHROW(cpu::modconv(p, a, yv, wsp));
  Buf ybad(Shape{2, 4, 5, 5});
  TensorView ybv = ybad.view();
  CHECK_THROWS_AS(cpu::modconv(p, a, ybv, wsp), Error);  // wrong spatial size
  Buf sbad(Shape{2, 7});
  TensorView sbv = sbad.view();
  a.s = &sbv;
  CHECK_THROWS_AS(cpu::modconv(p, a, yv, wsp), Error);  // style width != Cin
  a.s = &sv;
  a.d = nullptr;
  CHECK_THROWS_AS(cpu::modconv(p, a, yv, wsp), Error);  // params say demod, none given
  a.d = &dv;
  ModConvParams pu = p;
  pu.up = true;
  Buf yu(Shape{2, 9, 9, 5});
  TensorView yuv = yu.view();
  CHECK_THROWS_AS(cpu::modconv(pu, a, yuv, wsp), Error);  // the up conv has no epilogue
  ModConvParams pk = p;
  pk.k = 9;
  CHECK_THROWS_AS(cpu::modconv_workspace_bytes(pk, c.x.shape, y.shape, 1), Error);
}

TEST_CASE("modconv workspace is bounded and does not grow with the image") {
  ModConvParams p;
  p.has_x2 = p.has_demod = p.has_bias = true;
  // The Winograd tile blocks are sized to the core's L2 (winograd.cpp), and with a 2 MiB L2 the
  // rounding of the last block leaves a 512^2 image a few KB more scratch than a 1024^2 one: the
  // workspace never grows with the image, and is equal across images at a 1 MiB L2.
  for (const int64_t l2 : {int64_t{2} << 20, int64_t{0}}) {
    cpu::winograd_detail::set_tile_scratch_l2_bytes(l2);
    const size_t a = cpu::modconv_workspace_bytes(p, Shape{1, 512, 512, 128}, Shape{1, 512, 512, 64}, 2);
    const size_t b = cpu::modconv_workspace_bytes(p, Shape{1, 1024, 1024, 128}, Shape{1, 1024, 1024, 64}, 2);
    CHECK(b <= a);
  }
  cpu::winograd_detail::set_tile_scratch_l2_bytes(int64_t{1} << 20);
  const size_t w512 = cpu::modconv_workspace_bytes(p, Shape{1, 512, 512, 128}, Shape{1, 512, 512, 64}, 2);
  const size_t w1024 = cpu::modconv_workspace_bytes(p, Shape{1, 1024, 1024, 128}, Shape{1, 1024, 1024, 64}, 2);
  const size_t w64 = cpu::modconv_workspace_bytes(p, Shape{1, 64, 64, 1024}, Shape{1, 64, 64, 512}, 2);
  ModConvParams pu;
  pu.up = true;
  pu.has_x2 = true;
  const size_t wup = cpu::modconv_workspace_bytes(pu, Shape{1, 256, 256, 256}, Shape{1, 513, 513, 64}, 2);
  MESSAGE("workspace bytes (2 threads): 512^2x128->64 " << w512 << ", 64^2x1024->512 " << w64 << ", up 256^2x256->64 "
                                                        << wup);
  // The weight is packed once per call (its own size), plus well under 2 MB per thread.
  auto weight_bytes = [](int64_t k, int64_t cin, int64_t cout) { return size_t(k * k * cin * cout * 4); };
  CHECK(w512 == w1024);
  CHECK(w512 < weight_bytes(3, 128, 64) + (4u << 20));
  CHECK(w64 < weight_bytes(3, 1024, 512) + (4u << 20));
  CHECK(wup < weight_bytes(3, 256, 64) + (4u << 20));
  cpu::winograd_detail::set_tile_scratch_l2_bytes(0);
}
