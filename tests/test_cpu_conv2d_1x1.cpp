// conv2d's 1x1 path (kernels/cpu/conv2d_1x1.cpp) against a naive double-precision 1x1 conv
// written here from the op definition: pixel counts that leave partial register tiles and work
// items, output channels that leave partial vectors and panels, depths of one, two and three depth
// blocks, a weight larger than one packed chunk, stride 2, activations, the residual (also as
// the output itself), and views the path takes (channel slices) or hands to the generic GEMM
// (channel stride 2). Then the two ISA copies of the register tile, called directly, must give
// the same bits (the order of the sums is the same on both).
//
// Tolerance as in test_cpu_conv2d_fast.cpp: max |got - ref| <= 1e-4 * max(1, max |ref|).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/conv2d_1x1.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/ops.h"

using namespace gpen;

namespace {

std::vector<float> random_vec(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

struct Case {
  int64_t N, H, W, C, Co;
  int s;
  bool bias, res;
  Activation act;
  int k = 1, pt = 0, pl = 0, pb = 0, pr = 0;  // kernel size and paddings (the tap-by-tap path)
};

int64_t out_h(const Case& c) { return (c.H + c.pt + c.pb - c.k) / c.s + 1; }
int64_t out_w(const Case& c) { return (c.W + c.pl + c.pr - c.k) / c.s + 1; }

// Output [N, Ho, Wo, Co] dense from dense x [N, H, W, C] and HWIO w [k][k][C][Co].
std::vector<float> naive(const Case& c, const std::vector<float>& x, const std::vector<float>& w,
                         const std::vector<float>& b, const std::vector<float>& r) {
  const int64_t Ho = out_h(c), Wo = out_w(c);
  std::vector<float> y(static_cast<size_t>(c.N * Ho * Wo * c.Co));
  std::vector<double> acc(static_cast<size_t>(c.Co));
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t oy = 0; oy < Ho; ++oy)
      for (int64_t ox = 0; ox < Wo; ++ox) {
        for (int64_t o = 0; o < c.Co; ++o) acc[o] = c.bias ? b[o] : 0.0;
        for (int ky = 0; ky < c.k; ++ky)
          for (int kx = 0; kx < c.k; ++kx) {
            const int64_t iy = oy * c.s + ky - c.pt, ix = ox * c.s + kx - c.pl;
            if (iy < 0 || iy >= c.H || ix < 0 || ix >= c.W) continue;
            const float* xp = x.data() + ((n * c.H + iy) * c.W + ix) * c.C;
            const float* wp = w.data() + (ky * c.k + kx) * c.C * c.Co;
            for (int64_t i = 0; i < c.C; ++i)
              for (int64_t o = 0; o < c.Co; ++o) acc[o] += static_cast<double>(xp[i]) * wp[i * c.Co + o];
          }
        for (int64_t o = 0; o < c.Co; ++o) {
          const size_t yi = static_cast<size_t>(((n * Ho + oy) * Wo + ox) * c.Co + o);
          const float v = c.act(static_cast<float>(acc[o]));
          y[yi] = c.res ? v + r[yi] : v;
        }
      }
  return y;
}

double rel_err(const std::vector<float>& got, const std::vector<float>& ref) {
  if (got.size() != ref.size()) return INFINITY;
  double e = 0, m = 1;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    e = std::max(e, std::fabs(static_cast<double>(got[i]) - ref[i]));
    m = std::max(m, std::fabs(static_cast<double>(ref[i])));
  }
  return e / m;
}

// A dense logical tensor inside a parent whose channel axis is cstride * C + extra wide.
struct Buf {
  std::vector<float> mem;
  TensorView v;
  Buf(const Shape& s, int64_t extra, int64_t cstride) {
    Shape parent = s;
    parent[3] = s[3] * cstride + extra;
    mem.assign(static_cast<size_t>(parent.numel()), 4321.0f);
    v = make_view(mem.data(), DType::f32, parent);
    v.shape = s;
    v.strides[3] = cstride;
    v.data = mem.data() + extra / 2;
  }
  float& at(int64_t i) {
    const int64_t C = v.dim(3);
    return v.f32()[(i / C) * v.stride(2) + (i % C) * v.stride(3)];
  }
  void set(const std::vector<float>& d) {
    for (size_t i = 0; i < d.size(); ++i) at(static_cast<int64_t>(i)) = d[i];
  }
  std::vector<float> get() {
    std::vector<float> d(static_cast<size_t>(v.numel()));
    for (size_t i = 0; i < d.size(); ++i) d[i] = at(static_cast<int64_t>(i));
    return d;
  }
  size_t untouched() const { return static_cast<size_t>(std::count(mem.begin(), mem.end(), 4321.0f)); }
};

void check_case(const Case& c, std::mt19937& rng) {
  const int64_t Ho = out_h(c), Wo = out_w(c);
  const Shape xs{c.N, c.H, c.W, c.C}, ys{c.N, Ho, Wo, c.Co}, wsh{c.k, c.k, c.C, c.Co};
  const auto x = random_vec(static_cast<size_t>(xs.numel()), rng);
  auto w = random_vec(static_cast<size_t>(wsh.numel()), rng, 1.0f / std::sqrt(float(c.k * c.k * c.C)));
  auto b = random_vec(static_cast<size_t>(c.Co), rng);
  const auto r = random_vec(static_cast<size_t>(ys.numel()), rng);
  const auto ref = naive(c, x, w, b, r);
  Conv2dParams p;
  p.kh = p.kw = c.k;
  p.pad_top = c.pt, p.pad_left = c.pl, p.pad_bottom = c.pb, p.pad_right = c.pr;
  p.stride_h = p.stride_w = c.s;
  p.has_bias = c.bias;
  p.has_residual = c.res;
  p.act = c.act;
  const cpu::ConvPath path = cpu::choose_conv(cpu::conv2d_case(p, xs, ys), {}).path;  // kernels/cpu/conv_select.h
  REQUIRE((path == cpu::ConvPath::gemm1x1 || path == cpu::ConvPath::gemm_taps));
  const TensorView wv = make_view(w.data(), DType::f32, wsh), bv = make_view(b.data(), DType::f32, {c.Co});
  struct Layout {
    int threads;
    int64_t extra, cstride;
    bool in_place;
    const char* name;
  };
  const Layout layouts[] = {{1, 0, 1, false, "dense, 1 thread"},
                            {2, 6, 1, false, "channel slices, 2 threads"},
                            {2, 0, 1, true, "residual is the output, 2 threads"},
                            {2, 1, 2, false, "channel stride 2 (generic GEMM), 2 threads"}};
  for (const Layout& L : layouts) {
    if (L.in_place && !c.res) continue;
    CAPTURE(L.name);
    Buf xb(xs, L.extra, L.cstride), yb(ys, L.extra, L.cstride), rb(ys, L.extra, L.cstride);
    xb.set(x);
    if (L.in_place) {
      yb.set(r);
    } else {
      yb.set(std::vector<float>(static_cast<size_t>(ys.numel()), NAN));  // every output must be written
      rb.set(r);
    }
    const size_t untouched = yb.untouched();
    cpu::set_num_threads(L.threads);
    std::vector<unsigned char> ws(cpu::conv2d_workspace_bytes(p, xs, ys, L.threads) + 4);
    const TensorView* res = c.res ? (L.in_place ? &yb.v : &rb.v) : nullptr;
    cpu::conv2d(p, xb.v, wv, c.bias ? &bv : nullptr, res, yb.v, ws.data() + 4);
    CHECK(rel_err(yb.get(), ref) <= 1e-4);
    CHECK(yb.untouched() == untouched);  // nothing written outside the output's channels
  }
}

}  // namespace

TEST_CASE("conv2d 1x1 path agrees with a naive 1x1 conv") {
  std::mt19937 rng(1616);
  const Activation lrelu = Activation::scaled_leaky();
  const Case cases[] = {
      {1, 5, 7, 20, 40, 1, true, false, Activation::relu()},       // 35 pixels, a partial vector
      {2, 10, 11, 64, 64, 1, true, true, Activation::none()},      // 220 pixels: 3 tiles, remainder rows
      {1, 9, 13, 600, 100, 1, false, true, lrelu},                 // 2 depth blocks, partial panel
      {1, 3, 5, 600, 1000, 1, true, true, Activation::relu()},     // 2 column blocks of one chunk
      {1, 4, 5, 1100, 300, 1, true, false, Activation::relu()},    // 3 depth blocks, 2 column blocks
      {1, 3, 4, 2048, 600, 1, true, true, Activation::none()},     // 2 packed chunks (4 MiB bound)
      {1, 11, 9, 48, 72, 2, true, false, Activation::relu()},      // stride 2, odd sizes
      {1, 1, 1, 5, 33, 1, true, false, Activation::none()},        // one pixel, 33 channels
  };
  for (const Case& c : cases) {
    CAPTURE(c.C);
    CAPTURE(c.Co);
    CAPTURE(c.H * c.W);
    check_case(c, rng);
  }
}

TEST_CASE("conv2d tap-by-tap path (kernels of several taps) agrees with a naive conv") {
  std::mt19937 rng(1617);
  const Case cases[] = {
      // R50's stride-2 3x3 (padding 1): rows that cross image rows and padding taps. The path
      // takes maps of >= 1024 output pixels.
      {1, 65, 63, 48, 40, 2, true, false, Activation::relu(), 3, 1, 1, 1, 1},
      {2, 23, 24, 32, 72, 1, true, true, Activation::none(), 3, 1, 1, 1, 1},  // 3x3 s1, 2 images
      // 520 channels: two depth blocks per tap; asymmetric padding, a 2x2 kernel.
      {1, 33, 32, 520, 64, 1, false, true, Activation::scaled_leaky(), 2, 1, 0, 0, 1},
      {1, 64, 64, 40, 36, 2, true, false, Activation::relu(), 5, 2, 2, 2, 2},  // 5x5 s2
      {1, 31, 30, 33, 50, 1, true, true, Activation::relu(), 1, 1, 0, 1, 2},   // a padded 1x1
  };
  for (const Case& c : cases) {
    CAPTURE(c.k);
    CAPTURE(c.C);
    CAPTURE(c.Co);
    check_case(c, rng);
  }
}

#if GPEN_HAVE_AVX512_KERNELS
namespace {

// C = act(A B + bias) + res through one ISA copy's tile, over depth blocks of kc, dense operands.
template <class TileFn>
std::vector<float> run_tiles(TileFn tile_fn, int mr, int nr, int64_t M, int64_t K, int64_t Co, int64_t kc,
                             const std::vector<float>& a, const std::vector<float>& w, const std::vector<float>& b,
                             const std::vector<float>& r) {
  const int64_t panels = (Co + nr - 1) / nr, ldc = panels * nr;
  std::vector<float> pack(static_cast<size_t>(panels * K * nr), 0.0f), acc(static_cast<size_t>(M * ldc));
  for (int64_t pn = 0; pn < panels; ++pn)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < nr && pn * nr + j < Co; ++j) pack[(pn * K + k) * nr + j] = w[k * Co + pn * nr + j];
  std::vector<float> y(static_cast<size_t>(M * Co), -7.0f);
  for (int64_t k0 = 0; k0 < K; k0 += kc) {
    for (int64_t i0 = 0; i0 < M; i0 += mr) {
      cpu::detail::G1Tile t;
      t.rows = static_cast<int>(std::min<int64_t>(mr, M - i0));
      const float* ak[16];
      float* yk[16];
      const float* rk[16];
      for (int q = 0; q < t.rows; ++q) ak[q] = a.data() + (i0 + q) * K + k0;
      t.a = ak, t.kd = std::min(kc, K - k0), t.ldc = ldc;
      t.load = k0 > 0, t.final = k0 + kc >= K;
      t.y = yk, t.res = rk, t.slope = 0.2f, t.gain = 1.5f;
      for (int64_t pn = 0; pn < panels; ++pn) {
        t.b = pack.data() + (pn * K + k0) * nr;
        t.c = acc.data() + i0 * ldc + pn * nr;
        for (int q = 0; q < t.rows; ++q) {
          yk[q] = y.data() + (i0 + q) * Co + pn * nr;
          rk[q] = r.data() + (i0 + q) * Co + pn * nr;
        }
        t.bias = b.data() + pn * nr;
        t.cols = static_cast<int>(std::min<int64_t>(nr, Co - pn * nr));
        tile_fn(t);
      }
    }
  }
  return y;
}

}  // namespace

TEST_CASE("conv2d 1x1 tiles: both ISA copies give the same bits") {
  if (!cpu::cpu_has_avx512()) return;  // the AVX-512 copy cannot run here
  namespace d = cpu::detail;
  std::mt19937 rng(77);
  for (const int64_t Co : {int64_t{8}, int64_t{45}, int64_t{96}}) {
    const int64_t M = 29, K = 70;
    const auto a = random_vec(static_cast<size_t>(M * K), rng), w = random_vec(static_cast<size_t>(K * Co), rng);
    const auto b = random_vec(static_cast<size_t>(Co), rng), r = random_vec(static_cast<size_t>(M * Co), rng);
    CAPTURE(Co);
    const auto base = run_tiles(d::isa_base::conv1x1_tile, d::isa_base::conv1x1_mr(), d::isa_base::conv1x1_nr(), M,
                                K, Co, 32, a, w, b, r);
    const auto wide = run_tiles(d::isa_avx512::conv1x1_tile, d::isa_avx512::conv1x1_mr(),
                                d::isa_avx512::conv1x1_nr(), M, K, Co, 32, a, w, b, r);
    CHECK(std::memcmp(base.data(), wide.data(), base.size() * sizeof(float)) == 0);
    // Depth blocks continue the same chain of sums: one block gives the same bits as three.
    const auto one = run_tiles(d::isa_base::conv1x1_tile, d::isa_base::conv1x1_mr(), d::isa_base::conv1x1_nr(), M, K,
                               Co, K, a, w, b, r);
    CHECK(std::memcmp(base.data(), one.data(), base.size() * sizeof(float)) == 0);
    double err = 0;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t o = 0; o < Co; ++o) {
        double s = b[o];
        for (int64_t k = 0; k < K; ++k) s += static_cast<double>(a[i * K + k]) * w[k * Co + o];
        s = 1.5 * (std::max(s, 0.0) + 0.2 * std::min(s, 0.0)) + r[i * Co + o];
        err = std::max(err, std::fabs(s - base[i * Co + o]));
      }
    CHECK(err <= 1e-4 * 30);  // |values| up to ~30: K = 70 unit-normal products
  }
}
#endif

// act_after_residual (kernels/params.h): y = act(conv + bias + residual). The 1x1 path applies it
// in its tile; every other path adds the residual, then runs the activation as a pass.
TEST_CASE("conv2d act_after_residual: act(conv + bias + residual) on the 1x1 path and the others") {
  std::mt19937 rng(4242);
  struct ActCase {
    int64_t H, W, C, Co;
    int k;
    int64_t cstride;  // 2: the generic GEMM (or the direct conv) instead of the 1x1 path
    bool in_place;
    const char* name;
  };
  const ActCase cases[] = {
      {9, 13, 40, 72, 1, 1, false, "1x1 path"},
      {9, 13, 40, 72, 1, 1, true, "1x1 path, residual is the output"},
      {6, 7, 20, 48, 1, 2, false, "1x1, channel stride 2: generic GEMM"},
      {7, 9, 16, 40, 3, 1, false, "3x3: GEMM"},
      {26, 25, 8, 16, 3, 1, true, "3x3 24x24 up: Winograd, residual is the output"},
  };
  for (const ActCase& c : cases) {
    CAPTURE(c.name);
    const int pad = c.k / 2;
    const Shape xs{1, c.H, c.W, c.C}, ys{1, c.H, c.W, c.Co}, wsh{c.k, c.k, c.C, c.Co};
    const auto x = random_vec(static_cast<size_t>(xs.numel()), rng);
    const auto w = random_vec(static_cast<size_t>(wsh.numel()), rng, 1.0f / std::sqrt(float(c.k * c.k * c.C)));
    const auto b = random_vec(static_cast<size_t>(c.Co), rng);
    const auto r = random_vec(static_cast<size_t>(ys.numel()), rng);
    const Activation act = Activation::scaled_leaky();
    std::vector<float> ref(static_cast<size_t>(ys.numel()));
    for (int64_t oy = 0; oy < c.H; ++oy)
      for (int64_t ox = 0; ox < c.W; ++ox)
        for (int64_t o = 0; o < c.Co; ++o) {
          double s = b[o];
          for (int ky = 0; ky < c.k; ++ky)
            for (int kx = 0; kx < c.k; ++kx) {
              const int64_t iy = oy + ky - pad, ix = ox + kx - pad;
              if (iy < 0 || iy >= c.H || ix < 0 || ix >= c.W) continue;
              for (int64_t i = 0; i < c.C; ++i)
                s += static_cast<double>(x[(iy * c.W + ix) * c.C + i]) * w[((ky * c.k + kx) * c.C + i) * c.Co + o];
            }
          const size_t yi = static_cast<size_t>((oy * c.W + ox) * c.Co + o);
          ref[yi] = act(static_cast<float>(s + r[yi]));
        }
    Conv2dParams p;
    p.kh = p.kw = c.k;
    p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = pad;
    p.has_bias = p.has_residual = true;
    p.act = act;
    p.act_after_residual = true;
    const TensorView wv = make_view(const_cast<float*>(w.data()), DType::f32, wsh);
    const TensorView bv = make_view(const_cast<float*>(b.data()), DType::f32, {c.Co});
    Buf xb(xs, 0, c.cstride), yb(ys, 0, c.cstride), rb(ys, 0, c.cstride);
    xb.set(x);
    if (c.in_place) {
      yb.set(r);
    } else {
      yb.set(std::vector<float>(static_cast<size_t>(ys.numel()), NAN));
      rb.set(r);
    }
    cpu::set_num_threads(2);
    std::vector<unsigned char> ws(cpu::conv2d_workspace_bytes(p, xs, ys, 2));
    cpu::conv2d(p, xb.v, wv, &bv, c.in_place ? &yb.v : &rb.v, yb.v, ws.data());
    CHECK(rel_err(yb.get(), ref) <= 1e-4);
  }
}
