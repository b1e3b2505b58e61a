// CPU reference kernels against PyTorch fixtures (tests/reference/make_op_fixtures.py) and, for the
// fast paths of conv2d and upfirdn2d (tiling, deep-kernel passes, channel chunks, separable
// blur), against naive double-precision loops written here from the op definitions.
//
// Tolerances. The engine and PyTorch sum the same fp32 products in different orders, so results
// differ by rounding only: about sqrt(K) * 2^-24 relative to the magnitude of the terms for a
// K-term dot product (K <= 1440 here, i.e. ~2e-6), with a worst case of K * 2^-24 ~ 1e-4. Sums are
// compared as max |got - ref| <= 1e-4 * max(1, max |ref|): far above rounding, far below what any
// indexing or padding mistake produces (errors of the order of the values themselves).
// Elementwise ops do the same single fp32 operations as PyTorch and get 1e-6; resize copies and
// must match exactly.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "engine/photo/npy.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/ops.h"

using namespace gpen;
using nlohmann::json;

namespace {

const std::string kOpsDir = std::string(GPEN_FIXTURE_DIR) + "/ops";
constexpr float kSentinel = 12345.0f;

struct Loaded {
  Shape shape;
  std::vector<float> v;
};

Loaded load_fixture(const std::string& file) {
  npy::Array a = npy::load(kOpsDir + "/" + file);
  return {a.engine_shape(), a.to_f32()};
}

// A host tensor, either dense or a channel slice of a wider parent buffer whose other elements
// hold kSentinel (to catch writes outside the slice): channels c0 + i * cstride of each parent
// row, the parent row holding C * cstride + extra channels.
struct Host {
  std::vector<float> buf;
  TensorView v;

  Host(const Shape& s, int64_t extra, float fill = 0.0f, int64_t cstride = 1) {
    Shape parent = s;
    parent[s.rank - 1] = s[s.rank - 1] * cstride + extra;
    buf.assign(static_cast<size_t>(parent.numel()), kSentinel);
    v = make_view(buf.data(), DType::f32, parent);
    v.shape = s;
    v.strides[s.rank - 1] = cstride;
    v.data = buf.data() + extra / 2;  // slice starts inside the parent row
    for_each([&](float& x) { x = fill; });
  }
  Host(const Loaded& l, int64_t extra, int64_t cstride = 1) : Host(l.shape, extra, 0.0f, cstride) { set(l.v); }

  template <class F>
  void for_each(F f) {
    const int64_t C = v.dim(v.rank() - 1), rows = C ? v.numel() / C : 0;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t off = 0, rr = r;
      for (int i = v.rank() - 2; i >= 0; --i) {
        off += (rr % v.dim(i)) * v.stride(i);
        rr /= v.dim(i);
      }
      for (int64_t c = 0; c < C; ++c) f(v.f32()[off + c * v.stride(v.rank() - 1)]);
    }
  }
  void set(const std::vector<float>& src) {
    size_t i = 0;
    for_each([&](float& x) { x = src[i++]; });
  }
  std::vector<float> get() {
    std::vector<float> out;
    for_each([&](float& x) { out.push_back(x); });
    return out;
  }
  // Every parent element outside the slice still holds the sentinel.
  bool outside_intact() {
    std::vector<char> inside(buf.size(), 0);
    for_each([&](float& x) { inside[static_cast<size_t>(&x - buf.data())] = 1; });
    for (size_t i = 0; i < buf.size(); ++i)
      if (!inside[i] && buf[i] != kSentinel) return false;
    return true;
  }
};

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

// max |got - ref| / max(1, max |ref|); infinity when sizes differ or a value is not finite.
double rel_err(const std::vector<float>& got, const std::vector<float>& ref) {
  if (got.size() != ref.size()) return INFINITY;
  double e = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    e = std::max(e, std::fabs(static_cast<double>(got[i]) - ref[i]));
  }
  return e / std::max(1.0, max_abs(ref));
}

Activation act_of(const json& j) { return Activation{j.at("slope").get<float>(), j.at("gain").get<float>()}; }

const json& manifest() {
  static json m = [] {
    std::ifstream f(kOpsDir + "/manifest.json");
    REQUIRE_MESSAGE(f.good(), "missing " << kOpsDir << "/manifest.json (run tests/reference/make_op_fixtures.py)");
    return json::parse(f);
  }();
  return m;
}

std::vector<json> cases_of(const std::string& op) {
  std::vector<json> out;
  for (const json& c : manifest().at("cases"))
    if (c.at("op") == op) out.push_back(c);
  return out;
}

// Worst errors seen per op, reported once at the end of the fixture tests.
std::map<std::string, double>& worst() {
  static std::map<std::string, double> w;
  return w;
}
void note(const std::string& op, double e) { worst()[op] = std::max(worst()[op], e); }

struct Layout {
  int threads;
  int64_t extra;    // 0: dense views; > 0: channel slices of wider buffers
  int64_t cstride;  // element stride of the channel axis
  const char* name;
};
constexpr Layout kLayouts[] = {{1, 0, 1, "dense, 1 thread"},
                               {2, 3, 1, "channel slices, 2 threads"},
                               {2, 1, 2, "every other channel, 2 threads"}};

// ------------------------------------------------------------------ conv2d
Conv2dParams conv_params(const json& j) {
  Conv2dParams p;
  p.kh = j.at("kh");
  p.kw = j.at("kw");
  p.stride_h = j.at("stride_h");
  p.stride_w = j.at("stride_w");
  p.pad_top = j.at("pad_top");
  p.pad_left = j.at("pad_left");
  p.pad_bottom = j.at("pad_bottom");
  p.pad_right = j.at("pad_right");
  p.groups = j.at("groups");
  p.has_bias = j.at("has_bias");
  p.has_residual = j.at("has_residual");
  p.act = act_of(j.at("act"));
  return p;
}

// Runs conv2d with a workspace of exactly the reported size, deliberately misaligned.
std::vector<float> run_conv(const Conv2dParams& p, Host& x, const TensorView& w, const TensorView* b, Host* r,
                            Host& y, int threads) {
  cpu::set_num_threads(threads);
  const size_t bytes = cpu::conv2d_workspace_bytes(p, x.v.shape, y.v.shape, threads);
  std::vector<unsigned char> ws(bytes + 4);
  cpu::conv2d(p, x.v, w, b, r ? &r->v : nullptr, y.v, ws.data() + 4);
  return y.get();
}

TEST_CASE("conv2d matches PyTorch fixtures") {
  const auto cases = cases_of("conv2d");
  REQUIRE(cases.size() >= 10);
  for (const json& c : cases) {
    const std::string name = c.at("name");
    const json& f = c.at("files");
    const Conv2dParams p = conv_params(c.at("params"));
    const Loaded xl = load_fixture(f.at("x")), wl = load_fixture(f.at("w")), yl = load_fixture(f.at("y"));
    std::vector<float> wv = wl.v;
    const TensorView w = make_view(wv.data(), DType::f32, wl.shape);
    Loaded bl;
    TensorView bv;
    if (p.has_bias) {
      bl = load_fixture(f.at("bias"));
      bv = make_view(bl.v.data(), DType::f32, bl.shape);
    }
    for (const Layout& L : kLayouts) {
      CAPTURE(name);
      CAPTURE(L.name);
      Host x(xl, L.extra, L.cstride), y(yl.shape, L.extra, NAN, L.cstride);
      std::unique_ptr<Host> r;
      if (p.has_residual) r = std::make_unique<Host>(load_fixture(f.at("residual")), L.extra, L.cstride);
      const std::vector<float> got = run_conv(p, x, w, p.has_bias ? &bv : nullptr, r.get(), y, L.threads);
      const double e = rel_err(got, yl.v);
      note("conv2d", e);
      CHECK(e <= 1e-4);
      CHECK(y.outside_intact());
    }
  }
}

// ------------------------------------------------------------------ dense
TEST_CASE("dense matches PyTorch fixtures") {
  for (const json& c : cases_of("dense")) {
    const std::string name = c.at("name");
    const json& f = c.at("files");
    const json& pj = c.at("params");
    DenseParams p;
    p.has_bias = pj.at("has_bias");
    p.w_scale = pj.at("w_scale");
    p.b_scale = pj.at("b_scale");
    p.act = act_of(pj.at("act"));
    const Loaded xl = load_fixture(f.at("x")), wl = load_fixture(f.at("w")), yl = load_fixture(f.at("y"));
    std::vector<float> wv = wl.v;
    const TensorView w = make_view(wv.data(), DType::f32, wl.shape);
    Loaded bl;
    TensorView bv;
    if (p.has_bias) {
      bl = load_fixture(f.at("bias"));
      bv = make_view(bl.v.data(), DType::f32, bl.shape);
    }
    for (const Layout& L : kLayouts) {
      CAPTURE(name);
      CAPTURE(L.name);
      cpu::set_num_threads(L.threads);
      Host x(xl, L.extra, L.cstride), y(yl.shape, L.extra, NAN, L.cstride);
      cpu::dense(p, x.v, w, p.has_bias ? &bv : nullptr, y.v);
      const double e = rel_err(y.get(), yl.v);
      note("dense", e);
      CHECK(e <= 1e-4);
      CHECK(y.outside_intact());
    }
  }
}

// The row-block path (from 8 rows: the transformers' tokens): the depth in panels of 256 and a
// last block of fewer outputs than the block width, against a double-precision loop; every
// thread count gives the same bits (each output is one lane's sum in input order).
TEST_CASE("dense over many rows matches a double-precision loop, the same on 1 and 2 threads") {
  const int64_t N = 261, I = 300, O = 45;  // the many-row path (kernels/cpu/dense.cpp: from 256 rows)
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(N * I), w(O * I), b(O), y1(N * O, NAN), y2(N * O, NAN);
  for (auto* v : {&x, &w, &b})
    for (float& e : *v) e = u(rng);
  DenseParams p;
  p.has_bias = true;
  p.w_scale = 0.5f;
  p.b_scale = 2.0f;
  p.act = Activation::leaky(0.2f);
  const TensorView xv = make_view(x.data(), DType::f32, {N, I}), wv = make_view(w.data(), DType::f32, {O, I});
  const TensorView bv = make_view(b.data(), DType::f32, {O});
  cpu::set_num_threads(1);
  cpu::dense(p, xv, wv, &bv, make_view(y1.data(), DType::f32, {N, O}));
  cpu::set_num_threads(2);
  cpu::dense(p, xv, wv, &bv, make_view(y2.data(), DType::f32, {N, O}));
  double worst = 0.0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o) {
      double acc = 0.0;
      for (int64_t i = 0; i < I; ++i) acc += static_cast<double>(x[n * I + i]) * w[o * I + i];
      double ref = acc * 0.5 + b[o] * 2.0;
      ref = ref < 0.0 ? 0.2 * ref : ref;
      worst = std::max(worst, std::fabs(ref - y1[n * O + o]));
    }
  // 300 products of magnitude <= 1 rounded in fp32: far below 1e-4 of a sum of magnitude ~10.
  CHECK(worst <= 1e-4);
  CHECK(std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)) == 0);
}

// ------------------------------------------------------------------ bias_act, add
TEST_CASE("bias_act matches PyTorch fixtures, also in place") {
  for (const json& c : cases_of("bias_act")) {
    const std::string name = c.at("name");
    const json& f = c.at("files");
    BiasActParams p;
    p.has_bias = c.at("params").at("has_bias");
    p.act = act_of(c.at("params").at("act"));
    const Loaded xl = load_fixture(f.at("x")), yl = load_fixture(f.at("y"));
    Loaded bl;
    TensorView bv;
    if (p.has_bias) {
      bl = load_fixture(f.at("bias"));
      bv = make_view(bl.v.data(), DType::f32, bl.shape);
    }
    for (const Layout& L : kLayouts) {
      for (bool inplace : {false, true}) {
        CAPTURE(name);
        CAPTURE(L.name);
        CAPTURE(inplace);
        cpu::set_num_threads(L.threads);
        Host x(xl, L.extra, L.cstride), y(yl.shape, L.extra, NAN, L.cstride);
        Host& out = inplace ? x : y;
        cpu::bias_act(p, x.v, p.has_bias ? &bv : nullptr, out.v);
        const double e = rel_err(out.get(), yl.v);
        note("bias_act", e);
        CHECK(e <= 1e-6);
        CHECK(out.outside_intact());
      }
    }
  }
}

TEST_CASE("add matches PyTorch fixtures, also in place") {
  for (const json& c : cases_of("add")) {
    const std::string name = c.at("name");
    const json& f = c.at("files");
    AddParams p;
    p.act = act_of(c.at("params").at("act"));
    const Loaded al = load_fixture(f.at("a")), bl = load_fixture(f.at("b")), yl = load_fixture(f.at("y"));
    for (const Layout& L : kLayouts) {
      for (int inplace = 0; inplace < 3; ++inplace) {  // separate output, y = a, y = b
        CAPTURE(name);
        CAPTURE(L.name);
        CAPTURE(inplace);
        cpu::set_num_threads(L.threads);
        Host a(al, L.extra, L.cstride), b(bl, L.extra + 2, L.cstride), y(yl.shape, L.extra, NAN, L.cstride);
        Host& out = inplace == 0 ? y : inplace == 1 ? a : b;
        cpu::add(p, a.v, b.v, out.v);
        const double e = rel_err(out.get(), yl.v);
        note("add", e);
        CHECK(e <= 1e-6);
        CHECK(out.outside_intact());
      }
    }
  }
}

// ------------------------------------------------------------------ resize_nearest
TEST_CASE("resize_nearest matches PyTorch fixtures exactly") {
  const auto cases = cases_of("resize_nearest");
  REQUIRE(cases.size() >= 4);
  for (const json& c : cases) {
    const std::string name = c.at("name");
    const json& f = c.at("files");
    ResizeNearestParams p;
    p.out_h = c.at("params").at("out_h");
    p.out_w = c.at("params").at("out_w");
    const Loaded xl = load_fixture(f.at("x")), yl = load_fixture(f.at("y"));
    for (const Layout& L : kLayouts) {
      CAPTURE(name);
      CAPTURE(L.name);
      cpu::set_num_threads(L.threads);
      Host x(xl, L.extra, L.cstride), y(yl.shape, L.extra, NAN, L.cstride);
      cpu::resize_nearest(p, x.v, y.v);
      CHECK(y.get() == yl.v);
      CHECK(y.outside_intact());
    }
  }
}

// ------------------------------------------------------------------ upfirdn2d
UpFirDn2dParams upfirdn_params(const json& j) {
  UpFirDn2dParams p;
  p.up_x = j.at("up_x");
  p.up_y = j.at("up_y");
  p.down_x = j.at("down_x");
  p.down_y = j.at("down_y");
  p.pad_x0 = j.at("pad_x0");
  p.pad_x1 = j.at("pad_x1");
  p.pad_y0 = j.at("pad_y0");
  p.pad_y1 = j.at("pad_y1");
  p.kh = j.at("kh");
  p.kw = j.at("kw");
  p.kernel = j.at("kernel").get<std::vector<float>>();
  return p;
}

std::vector<float> run_upfirdn(const UpFirDn2dParams& p, Host& x, Host& y, int threads) {
  cpu::set_num_threads(threads);
  std::vector<unsigned char> ws(cpu::upfirdn2d_workspace_bytes(p, x.v.shape, y.v.shape, threads) + 4);
  cpu::upfirdn2d(p, x.v, y.v, ws.data() + 4);
  return y.get();
}

TEST_CASE("upfirdn2d matches the StyleGAN2 definition (PyTorch fixtures)") {
  const auto cases = cases_of("upfirdn2d");
  REQUIRE(cases.size() >= 6);
  for (const json& c : cases) {
    const std::string name = c.at("name");
    const json& f = c.at("files");
    const UpFirDn2dParams p = upfirdn_params(c.at("params"));
    const Loaded xl = load_fixture(f.at("x")), yl = load_fixture(f.at("y"));
    for (const Layout& L : kLayouts) {
      CAPTURE(name);
      CAPTURE(L.name);
      Host x(xl, L.extra, L.cstride), y(yl.shape, L.extra, NAN, L.cstride);
      const double e = rel_err(run_upfirdn(p, x, y, L.threads), yl.v);
      note("upfirdn2d", e);
      CHECK(e <= 1e-5);
      CHECK(y.outside_intact());
    }
  }
}

// ------------------------------------------------------------------ softmax
TEST_CASE("softmax matches PyTorch fixtures, also in place") {
  for (const json& c : cases_of("softmax")) {
    const std::string name = c.at("name");
    const json& f = c.at("files");
    const Loaded xl = load_fixture(f.at("x")), yl = load_fixture(f.at("y"));
    for (const Layout& L : kLayouts) {
      for (bool inplace : {false, true}) {
        CAPTURE(name);
        CAPTURE(L.name);
        CAPTURE(inplace);
        cpu::set_num_threads(L.threads);
        Host x(xl, L.extra, L.cstride), y(yl.shape, L.extra, NAN, L.cstride);
        Host& out = inplace ? x : y;
        cpu::softmax(SoftmaxParams{}, x.v, out.v);
        // Probabilities in [0, 1]: an absolute bound of a few ulps of 1.
        const double e = rel_err(out.get(), yl.v);
        note("softmax", e);
        CHECK(e <= 1e-6);
        CHECK(out.outside_intact());
      }
    }
  }
}

TEST_CASE("worst fixture errors (report)") {
  for (const auto& [op, e] : worst()) MESSAGE(op << ": max |err| / max(1, max |ref|) = " << e);
}

// ------------------------------------------------------------------ fast paths vs naive loops
std::vector<float> random_vec(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Direct transcription of the conv2d definition in double precision (dense NHWC / HWIO).
std::vector<float> conv_naive(const Conv2dParams& p, const Shape& xs, const std::vector<float>& x,
                              const std::vector<float>& w, const std::vector<float>* b,
                              const std::vector<float>* r, const Shape& ys) {
  const int64_t N = xs[0], H = xs[1], W = xs[2], C = xs[3], Ho = ys[1], Wo = ys[2], Co = ys[3];
  const int64_t cig = C / p.groups, cog = Co / p.groups;
  std::vector<float> y(static_cast<size_t>(ys.numel()));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oy = 0; oy < Ho; ++oy)
      for (int64_t ox = 0; ox < Wo; ++ox)
        for (int64_t o = 0; o < Co; ++o) {
          const int64_t g = o / cog;
          double s = b ? (*b)[o] : 0.0;
          for (int64_t ky = 0; ky < p.kh; ++ky)
            for (int64_t kx = 0; kx < p.kw; ++kx) {
              const int64_t iy = oy * p.stride_h + ky - p.pad_top, ix = ox * p.stride_w + kx - p.pad_left;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
              for (int64_t i = 0; i < cig; ++i)
                s += static_cast<double>(x[((n * H + iy) * W + ix) * C + g * cig + i]) *
                     w[((ky * p.kw + kx) * cig + i) * Co + o];
            }
          const size_t yi = static_cast<size_t>(((n * Ho + oy) * Wo + ox) * Co + o);
          float v = p.act(static_cast<float>(s));
          y[yi] = r ? v + (*r)[yi] : v;
        }
  return y;
}

struct ConvSpec {
  const char* what;
  int64_t N, H, W, C, Co;
  int k, stride, pad, groups;
  bool bias, residual;
};

TEST_CASE("conv2d fast paths agree with a naive conv") {
  std::mt19937 rng(7);
  const ConvSpec specs[] = {
      {"3x3, two pixel tiles", 1, 20, 20, 16, 24, 3, 1, 1, 1, true, false},
      {"3x3, K = 2700 in three passes", 1, 6, 7, 300, 20, 3, 1, 1, 1, true, true},
      {"1x1, 600 outputs in channel chunks", 1, 3, 3, 40, 600, 1, 1, 0, 1, true, false},
      {"1x1, batch of 3 in one tile", 3, 5, 5, 8, 8, 1, 1, 0, 1, false, false},
      {"3x3, tile spanning 3 images", 3, 5, 5, 8, 8, 3, 1, 1, 1, true, false},
      {"3x3 s2, groups 4", 1, 9, 9, 16, 8, 3, 2, 1, 4, true, false},
      {"7x7 s2 stem", 1, 16, 16, 3, 8, 7, 2, 3, 1, true, false},
      {"depthwise 3x3, wide row in two segments", 1, 3, 300, 64, 64, 3, 1, 1, 64, true, true},
      {"depthwise 3x3 s2", 2, 7, 9, 24, 24, 3, 2, 1, 24, false, false},
      {"4x4 s2 pad 1", 1, 8, 10, 12, 16, 4, 2, 1, 1, true, false},
  };
  for (const ConvSpec& s : specs) {
    Conv2dParams p;
    p.kh = p.kw = s.k;
    p.stride_h = p.stride_w = s.stride;
    p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = s.pad;
    p.groups = s.groups;
    p.has_bias = s.bias;
    p.has_residual = s.residual;
    p.act = Activation::scaled_leaky();
    const int64_t Ho = (s.H + 2 * s.pad - s.k) / s.stride + 1, Wo = (s.W + 2 * s.pad - s.k) / s.stride + 1;
    const Shape xs{s.N, s.H, s.W, s.C}, ys{s.N, Ho, Wo, s.Co}, wsh{s.k, s.k, s.C / s.groups, s.Co};
    const auto x = random_vec(static_cast<size_t>(xs.numel()), rng);
    auto w = random_vec(static_cast<size_t>(wsh.numel()), rng, 1.0f / std::sqrt(float(wsh[0] * wsh[1] * wsh[2])));
    auto b = random_vec(static_cast<size_t>(s.Co), rng);
    const auto r = random_vec(static_cast<size_t>(ys.numel()), rng);
    const auto ref = conv_naive(p, xs, x, w, s.bias ? &b : nullptr, s.residual ? &r : nullptr, ys);
    const TensorView wv = make_view(w.data(), DType::f32, wsh), bv = make_view(b.data(), DType::f32, {s.Co});
    for (const Layout& L : kLayouts) {
      CAPTURE(s.what);
      CAPTURE(L.name);
      Host xh(xs, L.extra, 0.0f, L.cstride), yh(ys, L.extra, NAN, L.cstride), rh(ys, L.extra, 0.0f, L.cstride);
      xh.set(x);
      rh.set(r);
      const auto got = run_conv(p, xh, wv, s.bias ? &bv : nullptr, s.residual ? &rh : nullptr, yh, L.threads);
      CHECK(rel_err(got, ref) <= 1e-4);
      CHECK(yh.outside_intact());
    }
  }
}

TEST_CASE("conv2d 1x1 reads inputs whose pixels are not uniformly strided") {
  std::mt19937 rng(11);
  Conv2dParams p;
  p.has_bias = false;
  const int64_t C = 8, Co = 6;
  auto w = random_vec(static_cast<size_t>(C * Co), rng);
  const TensorView wv = make_view(w.data(), DType::f32, {1, 1, C, Co});

  SUBCASE("spatial window of a larger map") {
    // x = parent[:, 1:6, 2:8, :] of a [2, 8, 9, C] buffer: rows and images are not contiguous.
    const Shape ps{2, 8, 9, C};
    auto parent = random_vec(static_cast<size_t>(ps.numel()), rng);
    TensorView x = make_view(parent.data(), DType::f32, ps);
    x.data = parent.data() + 1 * x.stride(1) + 2 * x.stride(2);
    x.shape = Shape{2, 5, 6, C};
    std::vector<float> xd;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t h = 0; h < 5; ++h)
        for (int64_t ww = 0; ww < 6; ++ww)
          for (int64_t c = 0; c < C; ++c)
            xd.push_back(x.f32()[n * x.stride(0) + h * x.stride(1) + ww * x.stride(2) + c]);
    const Shape ys{2, 5, 6, Co};
    const auto ref = conv_naive(p, x.shape, xd, w, nullptr, nullptr, ys);
    for (int threads : {1, 2}) {
      Host y(ys, 0, NAN);
      cpu::set_num_threads(threads);
      std::vector<unsigned char> ws(cpu::conv2d_workspace_bytes(p, x.shape, ys, threads));
      cpu::conv2d(p, x, wv, nullptr, nullptr, y.v, ws.data());
      CHECK(rel_err(y.get(), ref) <= 1e-5);
    }
  }
  SUBCASE("every other channel (channel stride 2) in and out") {
    const Shape xs{1, 4, 5, C}, ys{1, 4, 5, Co};
    auto parent = random_vec(static_cast<size_t>(xs.numel() * 2), rng);
    TensorView x = make_view(parent.data(), DType::f32, Shape{1, 4, 5, 2 * C});
    x.shape = xs;
    x.strides[3] = 2;
    std::vector<float> xd;
    for (int64_t i = 0; i < xs.numel(); ++i) xd.push_back(parent[static_cast<size_t>(2 * i)]);
    const auto ref = conv_naive(p, xs, xd, w, nullptr, nullptr, ys);
    std::vector<float> ybuf(static_cast<size_t>(ys.numel() * 2), kSentinel);
    TensorView y = make_view(ybuf.data(), DType::f32, Shape{1, 4, 5, 2 * Co});
    y.shape = ys;
    y.strides[3] = 2;
    std::vector<unsigned char> ws(cpu::conv2d_workspace_bytes(p, xs, ys, 2));
    cpu::set_num_threads(2);
    cpu::conv2d(p, x, wv, nullptr, nullptr, y, ws.data());
    std::vector<float> got;
    for (int64_t i = 0; i < ys.numel(); ++i) got.push_back(ybuf[static_cast<size_t>(2 * i)]);
    CHECK(rel_err(got, ref) <= 1e-5);
    for (int64_t i = 0; i < ys.numel(); ++i) CHECK(ybuf[static_cast<size_t>(2 * i + 1)] == kSentinel);
  }
}

TEST_CASE("conv2d workspace stays bounded at GPEN-512 sizes") {
  Conv2dParams p;
  p.kh = p.kw = 3;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  // Largest feature map (512 x 512, 128 -> 64) and deepest kernel (64 x 64, 1024 -> 512).
  const size_t big_map = cpu::conv2d_workspace_bytes(p, {1, 512, 512, 128}, {1, 512, 512, 64}, 1);
  const size_t deep = cpu::conv2d_workspace_bytes(p, {1, 64, 64, 1024}, {1, 64, 64, 512}, 1);
  MESSAGE("conv2d workspace per thread: 512x512 128->64: " << big_map / 1024 << " KiB, 64x64 1024->512: "
                                                           << deep / 1024 << " KiB");
  CHECK(big_map < (size_t{4} << 20));
  CHECK(deep < (size_t{4} << 20));
  CHECK(cpu::conv2d_workspace_bytes(p, {1, 64, 64, 1024}, {1, 64, 64, 512}, 2) > deep);
}

TEST_CASE("conv2d rejects inconsistent arguments with gpen::Error") {
  Conv2dParams p;
  p.kh = p.kw = 3;
  std::vector<float> xb(1 * 6 * 6 * 4), wb(3 * 3 * 4 * 5), yb(1 * 4 * 4 * 5);
  const TensorView x = make_view(xb.data(), DType::f32, {1, 6, 6, 4});
  const TensorView w = make_view(wb.data(), DType::f32, {3, 3, 4, 5});
  const TensorView y = make_view(yb.data(), DType::f32, {1, 4, 4, 5});
  std::vector<unsigned char> ws(cpu::conv2d_workspace_bytes(p, x.shape, y.shape, 2));
  CHECK_NOTHROW(cpu::conv2d(p, x, w, nullptr, nullptr, y, ws.data()));
  const TensorView y_bad = make_view(yb.data(), DType::f32, {1, 5, 4, 5});
  CHECK_THROWS_AS(cpu::conv2d(p, x, w, nullptr, nullptr, y_bad, ws.data()), Error);
  CHECK_THROWS_AS(cpu::conv2d_workspace_bytes(p, x.shape, y_bad.shape, 1), Error);
  const TensorView w_bad = make_view(wb.data(), DType::f32, {3, 3, 5, 4});
  CHECK_THROWS_AS(cpu::conv2d(p, x, w_bad, nullptr, nullptr, y, ws.data()), Error);
  CHECK_THROWS_AS(cpu::conv2d(p, x, w, &w, nullptr, y, ws.data()), Error);  // bias given, has_bias false
  CHECK_THROWS_AS(cpu::conv2d(p, x, w, nullptr, nullptr, y, nullptr), Error);
  TensorView x_f16 = x;
  x_f16.dtype = DType::f16;
  CHECK_THROWS_AS(cpu::conv2d(p, x_f16, w, nullptr, nullptr, y, ws.data()), Error);
  Conv2dParams g = p;
  g.groups = 3;  // 4 channels do not split in 3 groups
  CHECK_THROWS_AS(cpu::conv2d(g, x, w, nullptr, nullptr, y, ws.data()), Error);
}

// Naive upfirdn2d in double precision, straight from the definition.
std::vector<float> upfirdn_naive(const UpFirDn2dParams& p, const Shape& xs, const std::vector<float>& x,
                                 const Shape& ys) {
  const int64_t N = xs[0], H = xs[1], W = xs[2], C = xs[3], Ho = ys[1], Wo = ys[2];
  std::vector<float> y(static_cast<size_t>(ys.numel()));
  auto sample = [&](int64_t n, int64_t j, int64_t i, int64_t c) -> double {
    const int64_t u = j - p.pad_y0, v = i - p.pad_x0;  // position in the upsampled signal
    if (u < 0 || v < 0 || u % p.up_y || v % p.up_x || u / p.up_y >= H || v / p.up_x >= W) return 0.0;
    return x[static_cast<size_t>(((n * H + u / p.up_y) * W + v / p.up_x) * C + c)];
  };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oy = 0; oy < Ho; ++oy)
      for (int64_t ox = 0; ox < Wo; ++ox)
        for (int64_t c = 0; c < C; ++c) {
          double s = 0;
          for (int ky = 0; ky < p.kh; ++ky)
            for (int kx = 0; kx < p.kw; ++kx)
              s += p.kernel[static_cast<size_t>((p.kh - 1 - ky) * p.kw + (p.kw - 1 - kx))] *
                   sample(n, oy * p.down_y + ky, ox * p.down_x + kx, c);
          y[static_cast<size_t>(((n * Ho + oy) * Wo + ox) * C + c)] = static_cast<float>(s);
        }
  return y;
}

TEST_CASE("upfirdn2d separable and direct paths agree with a naive loop") {
  std::mt19937 rng(3);
  const std::vector<float> b4 = {1, 3, 3, 1};
  auto outer = [](const std::vector<float>& a, const std::vector<float>& b, float scale) {
    std::vector<float> k;
    for (float u : a)
      for (float v : b) k.push_back(u * v * scale);
    return k;
  };
  struct Spec {
    const char* what;
    int kh, kw;
    std::vector<float> k;
    int up, down, p0, p1;
    int64_t N, H, W, C;
  };
  const Spec specs[] = {
      {"GPEN blur pad 2,2 (separable)", 4, 4, outer(b4, b4, 1.0f / 64), 1, 1, 2, 2, 2, 17, 13, 5},
      {"GPEN upsample x2 (separable)", 4, 4, outer(b4, b4, 4.0f / 64), 2, 1, 2, 1, 1, 9, 11, 3},
      // The few-channel x-upsampling rows (1, 3, 4 channels as constants, others at run time).
      {"GPEN upsample x2, 1 channel", 4, 4, outer(b4, b4, 4.0f / 64), 2, 1, 2, 1, 2, 7, 6, 1},
      {"GPEN upsample x2, 4 channels", 4, 4, outer(b4, b4, 4.0f / 64), 2, 1, 1, 2, 1, 5, 9, 4},
      {"up 3, 5 taps, cropped left, 7 channels", 5, 5, outer({1, 2, 3, 2, 1}, {1, 2, 3, 2, 1}, 1.0f / 81), 3, 1, -1, 3,
       1, 6, 7, 7},
      {"GPEN downsample x2 (separable)", 4, 4, outer(b4, b4, 1.0f / 64), 1, 2, 1, 1, 1, 16, 14, 6},
      {"7x7 gaussian-like, up 2 down 2, cropped", 7, 7, outer({1, 6, 15, 20, 15, 6, 1}, {1, 6, 15, 20, 15, 6, 1}, 1.0f / 4096),
       2, 2, 1, -2, 1, 10, 9, 4},
      {"1x4 horizontal only", 1, 4, {0.1f, 0.4f, 0.4f, 0.1f}, 1, 1, 1, 2, 1, 6, 8, 5},
      {"non-separable 3x3, up 2, down 3", 3, 3, random_vec(9, rng), 2, 3, 2, 1, 2, 11, 10, 3},
  };
  for (const Spec& s : specs) {
    UpFirDn2dParams p;
    p.kh = s.kh;
    p.kw = s.kw;
    p.kernel = s.k;
    p.up_x = p.up_y = s.up;
    p.down_x = p.down_y = s.down;
    p.pad_x0 = p.pad_y0 = s.p0;
    p.pad_x1 = p.pad_y1 = s.p1;
    const int64_t Ho = (s.H * s.up + s.p0 + s.p1 - s.kh) / s.down + 1;
    const int64_t Wo = (s.W * s.up + s.p0 + s.p1 - s.kw) / s.down + 1;
    const Shape xs{s.N, s.H, s.W, s.C}, ys{s.N, Ho, Wo, s.C};
    const auto x = random_vec(static_cast<size_t>(xs.numel()), rng);
    const auto ref = upfirdn_naive(p, xs, x, ys);
    for (const Layout& L : kLayouts) {
      CAPTURE(s.what);
      CAPTURE(L.name);
      Host xh(xs, L.extra, 0.0f, L.cstride), yh(ys, L.extra, NAN, L.cstride);
      xh.set(x);
      CHECK(rel_err(run_upfirdn(p, xh, yh, L.threads), ref) <= 1e-5);
      CHECK(yh.outside_intact());
    }
  }
}

TEST_CASE("upfirdn2d rejects inconsistent arguments with gpen::Error") {
  UpFirDn2dParams p;
  p.kh = p.kw = 2;
  p.kernel = {1, 2, 3};  // 3 taps for a 2x2 kernel
  std::vector<float> xb(16), yb(9);
  const TensorView x = make_view(xb.data(), DType::f32, {1, 4, 4, 1});
  const TensorView y = make_view(yb.data(), DType::f32, {1, 3, 3, 1});
  std::vector<unsigned char> ws(1 << 16);
  CHECK_THROWS_AS(cpu::upfirdn2d(p, x, y, ws.data()), Error);
  p.kernel = {1, 2, 3, 4};
  CHECK_NOTHROW(cpu::upfirdn2d(p, x, y, ws.data()));
  p.pad_x0 = -4;  // crops the whole input
  CHECK_THROWS_AS(cpu::upfirdn2d_workspace_bytes(p, x.shape, y.shape, 1), Error);
}

TEST_CASE("elementwise ops reject shape mismatches with gpen::Error") {
  std::vector<float> a(24), b(24), bias(5);
  const TensorView va = make_view(a.data(), DType::f32, {2, 3, 4});
  const TensorView vb = make_view(b.data(), DType::f32, {2, 4, 3});
  const TensorView vbias = make_view(bias.data(), DType::f32, {5});
  CHECK_THROWS_AS(cpu::add(AddParams{}, va, vb, va), Error);
  BiasActParams bp;
  bp.has_bias = true;
  CHECK_THROWS_AS(cpu::bias_act(bp, va, &vbias, va), Error);
  CHECK_THROWS_AS(cpu::softmax(SoftmaxParams{}, va, vb), Error);
  ResizeNearestParams rp;
  CHECK_THROWS_AS(cpu::resize_nearest(rp, va, va), Error);
}

}  // namespace

// The internal whole-product SGEMM (kernels/cpu/gemm.h), kept for kernels that multiply plain
// row-major matrices; conv2d uses its panel-level entry points, covered by the conv tests above.
TEST_CASE("sgemm_acc accumulates a row-major product with leading dimensions") {
  std::mt19937 rng(5);
  for (const auto& [m, n, k] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {7, 5, 3}, {300, 70, 600}, {33, 260, 17}}) {
    CAPTURE(m);
    CAPTURE(n);
    CAPTURE(k);
    const int64_t lda = k + 3, ldb = n + 1, ldc = n + 2;
    const auto A = random_vec(static_cast<size_t>(m * lda), rng), B = random_vec(static_cast<size_t>(k * ldb), rng);
    auto C = random_vec(static_cast<size_t>(m * ldc), rng);
    std::vector<double> ref(C.begin(), C.end());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t d = 0; d < k; ++d) ref[i * ldc + j] += double(A[i * lda + d]) * B[d * ldb + j];
    const auto blk = cpu::detail::gemm_blocking(m, n, k);
    std::vector<float> pack(cpu::detail::gemm_pack_floats(blk) + 16);
    cpu::detail::sgemm_acc(m, n, k, A.data(), lda, B.data(), ldb, C.data(), ldc, blk, cpu::detail::align_ptr(pack.data()));
    double err = 0, mag = 1;
    for (size_t i = 0; i < C.size(); ++i) {
      err = std::max(err, std::fabs(C[i] - ref[i]));
      mag = std::max(mag, std::fabs(ref[i]));
    }
    CHECK(err / mag <= 1e-5);
  }
}
