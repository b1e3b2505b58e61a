// The Winograd modconv (kernels/cpu/winograd.h), F(2x2, 3x3) and F(4x4, 3x3), against a float64
// reference of the decomposed modconv and against the direct path (cpu::modconv under the
// options of GPEN_CPU_CONV=direct), on shapes that stress the tiling: odd sizes
// (clipped edge tiles), K blocks, output-channel chunks, tails and transformed-weight groups,
// broadcast x, the noise concat straddling a vector, strided views and an in-place residual. The
// ctest registration runs it on the AVX2 and the AVX-512 path.
//
// Tolerances. The direct path's error is a few ulps of the sum of |products| ("mass", see
// test_cpu_modconv.cpp: 1e-6 * mass + 1e-6). Winograd adds the rounding of the transforms, whose
// coefficients reach 5 (B^T) and 8 (A^T) for m = 4, so its error is a small multiple of the
// direct one: we allow 1e-5 * mass + 1e-5 for m = 4 and 2e-6 * mass + 2e-6 for m = 2 (measured
// worst cases, the MESSAGE lines below: 0.35 and 0.05 of those, the same bits on both ISA paths);
// a wrong tap, channel, tile or sample moves outputs by O(mass / sqrt(K)), orders above.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <cstdlib>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/winograd.h"

using namespace gpen;

namespace {

struct Strided {
  std::vector<float> mem;
  TensorView view;
  // NHWC tensor `s` as channels [c0, c0 + s[3]) of a parent with `ctot` channels.
  Strided(const Shape& s, int64_t ctot, int64_t c0) {
    Shape parent = s;
    parent[3] = ctot;
    mem.assign(static_cast<size_t>(parent.numel()), 0.0f);
    view = make_view(mem.data() + c0, DType::f32, s);
    view.strides = dense_strides(parent);
  }
  float& at(int64_t n, int64_t y, int64_t x, int64_t c) {
    return view.f32()[n * view.stride(0) + y * view.stride(1) + x * view.stride(2) + c];
  }
};

struct Case {
  int64_t N, XN, H, W, C1, C2, Co;
  bool demod, bias, act, res, strided;
};

// One algorithm at one thread count: m = 2 or 4 for Winograd, 0 for the direct path.
struct Variant {
  int m, threads;
};
constexpr Variant kVariants[] = {{2, 1}, {2, 2}, {4, 1}, {4, 2}, {0, 1}, {0, 2}};

struct Run {
  std::vector<std::vector<float>> got;  // per kVariants entry
  std::vector<double> ref, mass;
};

// `o` with the direct paths (GPEN_CPU_CONV=direct).
cpu::CpuOptions direct(cpu::CpuOptions o = {}) {
  o.conv = cpu::ConvMode::direct;
  return o;
}

// The float64 reference once, then every variant on the same data (the Winograd forms `o` allows).
Run run_case(const Case& k, std::mt19937& rng, const cpu::CpuOptions& o) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t C = k.C1 + k.C2;
  const int64_t pad = k.strided ? 3 : 0;
  Strided x(Shape{k.XN, k.H, k.W, k.C1}, k.C1 + pad, pad), x2(Shape{k.N, k.H, k.W, std::max<int64_t>(k.C2, 1)}, k.C2 + pad, 0);
  for (auto& v : x.mem) v = nd(rng);
  for (auto& v : x2.mem) v = nd(rng);
  std::vector<float> w(static_cast<size_t>(9 * C * k.Co)), s(static_cast<size_t>(k.N * C)), d(static_cast<size_t>(k.N * k.Co)),
      b(static_cast<size_t>(k.Co)), b2(static_cast<size_t>(std::max<int64_t>(k.C2, 1))), sc{0.7f};
  for (auto& v : w) v = nd(rng) / std::sqrt(float(9 * C));
  for (auto& v : s) v = 1.0f + 0.3f * nd(rng);
  for (auto& v : d) v = 0.5f + 0.1f * nd(rng);
  for (auto& v : b) v = 0.2f * nd(rng);
  for (auto& v : b2) v = 0.2f * nd(rng);
  TensorView wv = make_view(w.data(), DType::f32, Shape{3, 3, C, k.Co}), sv = make_view(s.data(), DType::f32, Shape{k.N, C});
  TensorView dv = make_view(d.data(), DType::f32, Shape{k.N, k.Co}), bv = make_view(b.data(), DType::f32, Shape{k.Co});
  TensorView b2v = make_view(b2.data(), DType::f32, Shape{std::max<int64_t>(k.C2, 1)});
  TensorView scv = make_view(sc.data(), DType::f32, Shape{1});
  ModConvParams p;
  p.has_x2 = k.C2 > 0;
  p.x2_act = Activation::scaled_leaky();
  p.has_demod = k.demod, p.has_bias = k.bias, p.has_residual = k.res;
  if (k.act) p.act = Activation::scaled_leaky();
  Strided r0(Shape{k.N, k.H, k.W, k.Co}, k.Co + pad, pad);
  for (auto& v : r0.mem) v = nd(rng);

  Run out;
  out.ref.resize(static_cast<size_t>(k.N * k.H * k.W * k.Co));
  out.mass.resize(out.ref.size());
  auto xin = [&](int64_t n, int64_t iy, int64_t ix, int64_t c) -> double {
    if (iy < 0 || iy >= k.H || ix < 0 || ix >= k.W) return 0.0;
    const double sc_ = s[n * C + c];
    if (c < k.C1) return double(x.at(k.XN == 1 ? 0 : n, iy, ix, c)) * sc_;
    const double t = double(x2.at(n, iy, ix, c - k.C1)) * sc[0] + b2[c - k.C1];
    return t * (t < 0 ? p.x2_act.slope : 1.0) * p.x2_act.gain * sc_;
  };
  // The conv's input with the prologue applied, once (the reference's inner loop stays a product).
  std::vector<double> xi(static_cast<size_t>(k.N * k.H * k.W * C));
  for (int64_t n = 0; n < k.N; ++n)
    for (int64_t iy = 0; iy < k.H; ++iy)
      for (int64_t ix = 0; ix < k.W; ++ix)
        for (int64_t c = 0; c < C; ++c) xi[static_cast<size_t>(((n * k.H + iy) * k.W + ix) * C + c)] = xin(n, iy, ix, c);
  for (int64_t n = 0; n < k.N; ++n)
    for (int64_t oy = 0; oy < k.H; ++oy)
      for (int64_t ox = 0; ox < k.W; ++ox)
        for (int64_t o = 0; o < k.Co; ++o) {
          double acc = 0, ms = 0;
          for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx) {
              const int64_t iy = oy + ky - 1, ix = ox + kx - 1;
              if (iy < 0 || iy >= k.H || ix < 0 || ix >= k.W) continue;
              const double* xp = xi.data() + ((n * k.H + iy) * k.W + ix) * C;
              const float* wp = w.data() + (ky * 3 + kx) * C * k.Co + o;
              for (int64_t c = 0; c < C; ++c) {
                const double t = xp[c] * wp[c * k.Co];
                acc += t, ms += std::abs(t);
              }
            }
          double v = acc * (k.demod ? d[n * k.Co + o] : 1.0) + (k.bias ? b[o] : 0.0);
          v = v * (v < 0 ? p.act.slope : 1.0) * p.act.gain;
          const double dm = k.demod ? std::abs(d[n * k.Co + o]) : 1.0;
          ms = ms * dm * p.act.gain;
          if (k.res) v += r0.at(n, oy, ox, o), ms += std::abs(r0.at(n, oy, ox, o));
          const size_t i = static_cast<size_t>(((n * k.H + oy) * k.W + ox) * k.Co + o);
          out.ref[i] = v, out.mass[i] = ms;
        }

  for (const Variant& var : kVariants) {
    cpu::set_num_threads(var.threads);
    // The residual is the output itself (in place), as the executor may plan it.
    Strided y(Shape{k.N, k.H, k.W, k.Co}, k.Co + pad, pad);
    y.mem = r0.mem;
    cpu::ModConvArgs a;
    a.x = &x.view, a.w = &wv, a.s = &sv;
    if (k.C2 > 0) a.x2 = &x2.view, a.x2_scale = &scv, a.x2_bias = &b2v;
    if (k.demod) a.d = &dv;
    if (k.bias) a.bias = &bv;
    if (k.res) a.residual = &y.view;
    const Shape xcat{k.XN, k.H, k.W, C};
    const int nt = cpu::num_threads();
    std::vector<unsigned char> ws;
    if (var.m) {
      const cpu::ConvChoice c = cpu::winograd_form(var.m, k.H, k.W, o);
      ws.assign(cpu::winograd_detail::modconv_winograd_workspace_bytes(c, xcat, y.view.shape, nt), 0xAB);
      cpu::winograd_detail::modconv_winograd(c, p, a, y.view, ws.data());
    } else {
      ws.assign(cpu::modconv_workspace_bytes(p, xcat, y.view.shape, nt, direct(o)) + 1, 0xAB);
      cpu::modconv(p, a, y.view, ws.data(), direct(o));
    }
    out.got.emplace_back(out.ref.size());
    std::vector<float>& got = out.got.back();
    for (int64_t n = 0; n < k.N; ++n)
      for (int64_t oy = 0; oy < k.H; ++oy)
        for (int64_t ox = 0; ox < k.W; ++ox)
          for (int64_t o = 0; o < k.Co; ++o) got[static_cast<size_t>(((n * k.H + oy) * k.W + ox) * k.Co + o)] = y.at(n, oy, ox, o);
  }
  return out;
}

// Worst error in units of the tolerance's mass term.
double worst(const std::vector<float>& got, const Run& r, double rel) {
  double w = 0;
  for (size_t i = 0; i < got.size(); ++i) w = std::max(w, std::abs(got[i] - r.ref[i]) / (rel * r.mass[i] + rel));
  return w;
}

}  // namespace

TEST_CASE("winograd modconv matches the float64 reference and the direct path") {
  std::mt19937 rng(11);
  const Case cases[] = {
      {2, 2, 9, 11, 40, 40, 40, true, true, true, true, false},    // odd sizes, noise concat, Co tail
      {1, 1, 17, 5, 150, 0, 70, true, true, true, false, false},   // K blocks, Co chunks with a tail
      {3, 1, 8, 8, 24, 8, 33, true, false, true, false, false},    // broadcast x, concat inside a vector
      {1, 1, 1, 3, 5, 0, 3, false, true, false, true, false},      // one row, tiles mostly outside
      {2, 2, 7, 6, 20, 12, 19, true, true, true, true, true},      // strided x, y, residual in place
      {1, 1, 40, 38, 16, 0, 16, false, false, false, false, false},  // many tile blocks
      {1, 1, 6, 6, 256, 0, 256, true, true, true, false, false},   // transformed weight in two groups
      {3, 3, 32, 30, 24, 8, 20, true, true, true, true, true},     // fused: one image per chunk (F(4): 64 tiles)
      {3, 1, 14, 13, 16, 8, 17, true, true, true, true, false},    // fused: chunks of 2 images then 1 (F(2))
  };
  // Both forms: up to kFusedMaxTiles tiles the fused one (winograd_small.cpp) unless switched off.
  for (const bool fused : {true, false}) {
    cpu::CpuOptions o;
    o.wino_fused = fused;
    int i = 0;
    for (const Case& k : cases) {
      const Run r = run_case(k, rng, o);
      for (size_t v = 0; v < r.got.size(); ++v) {
        const Variant var = kVariants[v];
        const double rel = var.m == 4 ? 1e-5 : var.m == 2 ? 2e-6 : 1e-6;
        const double e = worst(r.got[v], r, rel);
        MESSAGE("case " << i << (var.m ? " winograd F(" + std::to_string(var.m) + ")" : std::string(" direct"))
                        << std::string(fused ? " fused" : " grouped") << " threads " << var.threads << ": " << e
                        << " of its tolerance");
        CHECK(e <= 1.0);
      }
      ++i;
    }
  }
  cpu::set_num_threads(0);
}

TEST_CASE("winograd fused form: its plan, its workspace against the direct path's, and where auto takes it") {
  namespace wd = cpu::winograd_detail;
  const cpu::CpuOptions on, off = [] {
    cpu::CpuOptions o;
    o.wino_fused = false;
    return o;
  }();
  // The workspace of F(m x m) in the form the default options give the shape.
  auto wino_ws = [&](int m, const Shape& x, const Shape& y, int threads) {
    return wd::modconv_winograd_workspace_bytes(cpu::winograd_form(m, x[1], x[2], on), x, y, threads);
  };
  // GPEN-256's 32x32 StyledConv (512 -> 256 with the noise concat): 64 tiles, one block.
  const wd::WinoPlan f = wd::make_wino_fused_plan(4, 1, 32, 32, 512, 256, 2);
  REQUIRE(f.fused);
  CHECK(f.nblock == 1);
  CHECK(f.T >= f.ntiles);
  CHECK(f.T % 6 == 0);
  CHECK(f.T <= wd::kFusedMaxTiles);
  CHECK(f.cc % 16 == 0);
  CHECK((256 + f.cc - 1) / f.cc >= 4);  // enough tasks for both threads
  // Its workspace: for GPEN-512's 32x32 layer (1024 -> 512), which ran direct before, below the
  // direct path's packed weight (9 C Co floats); for GPEN-256's, within the largest workspace of
  // that graph before it (its 64x64 layer, 256 -> 128, grouped, with the 30-tile blocks of a 2 MiB
  // L2; a core with less L2 runs that layer in smaller blocks, fit_tile_block, and the fused one
  // then sets the graph's workspace, still below that figure), so the plan's workspace does not grow.
  const wd::WinoPlan g512 = wd::make_wino_fused_plan(4, 1, 32, 32, 1024, 512, 2);
  CHECK(g512.v_floats + 2 * g512.per_thread <= 9 * 1024 * 512);
  const size_t conv5 = wino_ws(4, Shape{1, 32, 32, 512}, Shape{1, 32, 32, 256}, 2);
  wd::set_tile_scratch_l2_bytes(int64_t{2} << 20);
  const size_t conv7 = wino_ws(4, Shape{1, 64, 64, 256}, Shape{1, 64, 64, 128}, 2);
  wd::set_tile_scratch_l2_bytes(int64_t{1} << 20);  // a Zen 4 core's: smaller blocks, less workspace
  const size_t conv7_1m = wino_ws(4, Shape{1, 64, 64, 256}, Shape{1, 64, 64, 128}, 2);
  wd::set_tile_scratch_l2_bytes(0);
  MESSAGE("fused 32x32 512 -> 256: " << conv5 << " bytes; grouped 64x64 256 -> 128: " << conv7 << " bytes (2 MiB L2), "
                                     << conv7_1m << " (1 MiB)");
  CHECK(conv5 <= conv7);
  CHECK(conv7_1m < conv7);
  // The 8x8 layers' F(2x2) fused form (GPEN-512's: 1024 -> 512) stays below that too.
  CHECK(wino_ws(2, Shape{1, 8, 8, 1024}, Shape{1, 8, 8, 512}, 2) <= conv7);
  // Past kFusedMaxTiles the grouped form.
  CHECK_FALSE(wd::make_wino_fused_plan(4, 1, 48, 48, 512, 256, 2).fused);
  CHECK_FALSE(wd::make_wino_fused_plan(4, 2, 32, 32, 512, 256, 2).fused);  // batch 2: 128 tiles
  // A batch runs the fused form in chunks of images, so its workspace never shrinks as the batch
  // grows: a short last batch (GpenModel::prepared_for) fits the arena planned for the full one.
  for (const int64_t hw : {8, 16, 32, 48}) {
    size_t prev = 0;
    for (int64_t n = 1; n <= 9; ++n) {
      const size_t b = wino_ws(hw == 8 ? 2 : 4, Shape{n, hw, hw, 512}, Shape{n, hw, hw, 256}, 2);
      CAPTURE(hw);
      CAPTURE(n);
      CHECK(b >= prev);
      prev = b;
    }
  }
  CHECK(cpu::winograd_form(4, 32, 32, on).path == cpu::ConvPath::winograd_fused);
  CHECK(cpu::winograd_form(4, 32, 32, off).path == cpu::ConvPath::winograd);
  // The auto rule (conv_select.h): the Winograd tile it picks, 0 for another path.
  ModConvParams p;
  p.k = 3;
  auto tile = [&](int64_t N, int64_t H, int64_t W, int64_t C, int64_t Co, const cpu::CpuOptions& o) {
    const cpu::ConvChoice c = cpu::choose_conv(cpu::modconv_case(p, Shape{N, H, W, C}, Shape{N, H, W, Co}), o);
    return c.path == cpu::ConvPath::winograd || c.path == cpu::ConvPath::winograd_fused ? c.tile : 0;
  };
  CHECK(tile(1, 16, 16, 512, 256, on) == 4);    // GPEN-256's convs.3
  CHECK(tile(1, 32, 32, 1024, 512, on) == 4);   // GPEN-512's 32x32 layer
  CHECK(tile(1, 16, 16, 1024, 512, on) == 4);   // GPEN-512's 16x16 layer
  const int m8 = cpu::cpu_isa() == cpu::Isa::avx512 ? 4 : 2;  // 8x8: fused, F(2x2) on AVX2
  CHECK(tile(1, 8, 8, 512, 256, on) == m8);
  CHECK(tile(1, 8, 8, 1024, 512, on) == m8);    // GPEN-512's 8x8 layer
  CHECK(tile(1, 4, 4, 512, 256, on) == 0);      // 4x4: direct
  CHECK(tile(1, 16, 16, 128, 128, on) == 0);    // few channels: direct
  // The batch does not change the choice (fused per chunk of images).
  CHECK(tile(8, 16, 16, 512, 256, on) == 4);
  CHECK(tile(2, 32, 32, 512, 256, on) == 4);
  CHECK(tile(5, 32, 32, 1024, 512, on) == 4);
  CHECK(tile(8, 8, 8, 512, 256, on) == m8);
  CHECK(tile(1, 16, 16, 512, 256, off) == 0);
}

TEST_CASE("winograd plan: groups bound the transformed weight, the scratch does not grow with the image") {
  namespace wd = cpu::winograd_detail;
  // GPEN-512's 64x64 layer (1024 -> 512): the transformed weight (4x the weight for m = 4) is
  // made in groups no larger than the direct path's packed weight of the same layer.
  const wd::WinoPlan big = wd::make_wino_plan(4, 1, 64, 64, 1024, 512, 2);
  CHECK(big.u_floats <= 9 * 1024 * 512);
  CHECK(big.ngroup * big.group_co >= 512);
  CHECK(big.per_thread * 4 < (2 << 20));  // under 2 MB per thread
  const wd::WinoPlan a = wd::make_wino_plan(4, 1, 512, 512, 128, 64, 2), b = wd::make_wino_plan(4, 1, 1024, 1024, 128, 64, 2);
  CHECK(a.per_thread == b.per_thread);
  CHECK(a.u_floats == b.u_floats);
  CHECK(a.T % 6 == 0);
  CHECK(a.T <= wd::kMaxTileBlock);
  CHECK_THROWS_AS(wd::make_wino_plan(3, 1, 8, 8, 8, 8, 1), Error);
}

TEST_CASE("winograd conv2d (3x3, stride 1, padding 1) matches the float64 reference and the direct path") {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  struct C2 {
    int64_t N, H, W, C, Co;
    bool bias, res, relu;
  };
  const C2 cases[] = {{1, 13, 10, 64, 48, true, true, true}, {2, 7, 9, 150, 35, true, false, false},
                      {1, 20, 6, 3, 16, false, true, true}};
  for (int m : {2, 4}) {
    const double rel = m == 4 ? 1e-5 : 2e-6;
    for (const C2& k : cases) {
      std::vector<float> x(static_cast<size_t>(k.N * k.H * k.W * k.C)), w(static_cast<size_t>(9 * k.C * k.Co)),
          b(static_cast<size_t>(k.Co)), r(static_cast<size_t>(k.N * k.H * k.W * k.Co));
      for (auto& v : x) v = nd(rng);
      for (auto& v : w) v = nd(rng) / std::sqrt(float(9 * k.C));
      for (auto& v : b) v = 0.3f * nd(rng);
      for (auto& v : r) v = nd(rng);
      Conv2dParams p;
      p.kh = p.kw = 3;
      p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
      p.has_bias = k.bias, p.has_residual = k.res;
      if (k.relu) p.act.slope = 0.0f;
      const Shape xs{k.N, k.H, k.W, k.C}, ys{k.N, k.H, k.W, k.Co};
      std::vector<double> ref(r.size()), mass(r.size());
      for (int64_t n = 0; n < k.N; ++n)
        for (int64_t oy = 0; oy < k.H; ++oy)
          for (int64_t ox = 0; ox < k.W; ++ox)
            for (int64_t o = 0; o < k.Co; ++o) {
              double acc = k.bias ? b[o] : 0.0, ms = k.bias ? std::abs(b[o]) : 0.0;
              for (int ky = 0; ky < 3; ++ky)
                for (int kx = 0; kx < 3; ++kx) {
                  const int64_t iy = oy + ky - 1, ix = ox + kx - 1;
                  if (iy < 0 || iy >= k.H || ix < 0 || ix >= k.W) continue;
                  for (int64_t c = 0; c < k.C; ++c) {
                    const double t = double(x[((n * k.H + iy) * k.W + ix) * k.C + c]) * w[((ky * 3 + kx) * k.C + c) * k.Co + o];
                    acc += t, ms += std::abs(t);
                  }
                }
              const size_t i = static_cast<size_t>(((n * k.H + oy) * k.W + ox) * k.Co + o);
              double v = acc < 0 ? acc * p.act.slope * p.act.gain : acc * p.act.gain;
              if (k.res) v += r[i], ms += std::abs(r[i]);
              ref[i] = v, mass[i] = ms;
            }
      TensorView xv = make_view(x.data(), DType::f32, xs), wv = make_view(w.data(), DType::f32, Shape{3, 3, k.C, k.Co});
      TensorView bv = make_view(b.data(), DType::f32, Shape{k.Co});
      for (int pass = 0; pass < 2; ++pass) {
        std::vector<float> y = r;  // the residual is the output itself (in place)
        TensorView yv = make_view(y.data(), DType::f32, ys);
        std::vector<unsigned char> ws;
        if (pass == 0) {
          ws.assign(cpu::winograd_detail::conv2d_winograd_workspace_bytes(m, xs, ys, cpu::num_threads()), 0xAB);
          cpu::winograd_detail::conv2d_winograd(m, p, xv, wv, k.bias ? &bv : nullptr, k.res ? &yv : nullptr, yv, ws.data());
        } else {
          ws.assign(cpu::conv2d_workspace_bytes(p, xs, ys, cpu::num_threads(), direct()) + 1, 0xAB);
          cpu::conv2d(p, xv, wv, k.bias ? &bv : nullptr, k.res ? &yv : nullptr, yv, ws.data(), direct());
        }
        const double tol = pass == 0 ? rel : 1e-6;
        double worst = 0;
        for (size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::abs(y[i] - ref[i]) / (tol * mass[i] + tol));
        MESSAGE("conv2d F(" << m << ") C " << k.C << std::string(pass == 0 ? " winograd " : " direct ") << worst << " of its tolerance");
        CHECK(worst <= 1.0);
      }
    }
  }
}

TEST_CASE("winograd conv2d with padding 0 on an input padded beforehand equals padding 1 bit for bit") {
  // ParseNet's convs read a reflection-padded copy with padding 0 ("valid"). With zeros in that
  // border the arithmetic is the padding-1 conv's, value for value: the results must be identical.
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t N = 2, H = 13, W = 10, C = 40, Co = 24;
  std::vector<float> x(static_cast<size_t>(N * H * W * C)), xp(static_cast<size_t>(N * (H + 2) * (W + 2) * C), 0.0f),
      w(static_cast<size_t>(9 * C * Co)), b(static_cast<size_t>(Co));
  for (auto& v : x) v = nd(rng);
  for (auto& v : w) v = nd(rng) / std::sqrt(float(9 * C));
  for (auto& v : b) v = 0.3f * nd(rng);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t iy = 0; iy < H; ++iy)
      for (int64_t ix = 0; ix < W; ++ix)
        for (int64_t c = 0; c < C; ++c)
          xp[static_cast<size_t>(((n * (H + 2) + iy + 1) * (W + 2) + ix + 1) * C + c)] =
              x[static_cast<size_t>(((n * H + iy) * W + ix) * C + c)];
  const Shape xs{N, H, W, C}, xps{N, H + 2, W + 2, C}, ys{N, H, W, Co};
  TensorView xv = make_view(x.data(), DType::f32, xs), xpv = make_view(xp.data(), DType::f32, xps);
  TensorView wv = make_view(w.data(), DType::f32, Shape{3, 3, C, Co}), bv = make_view(b.data(), DType::f32, Shape{Co});
  for (int m : {2, 4}) {
    CAPTURE(m);
    Conv2dParams same, valid;
    same.kh = same.kw = valid.kh = valid.kw = 3;
    same.pad_top = same.pad_left = same.pad_bottom = same.pad_right = 1;
    same.has_bias = valid.has_bias = true;
    same.act.slope = valid.act.slope = 0.2f;
    std::vector<float> y1(static_cast<size_t>(N * H * W * Co)), y0(y1.size());
    std::vector<unsigned char> ws1(cpu::winograd_detail::conv2d_winograd_workspace_bytes(m, xs, ys, cpu::num_threads()));
    std::vector<unsigned char> ws0(cpu::winograd_detail::conv2d_winograd_workspace_bytes(m, xps, ys, cpu::num_threads()));
    cpu::winograd_detail::conv2d_winograd(m, same, xv, wv, &bv, nullptr, make_view(y1.data(), DType::f32, ys), ws1.data());
    cpu::winograd_detail::conv2d_winograd(m, valid, xpv, wv, &bv, nullptr, make_view(y0.data(), DType::f32, ys), ws0.data());
    CHECK(std::memcmp(y1.data(), y0.data(), y1.size() * sizeof(float)) == 0);
  }
  // The shape rule takes both forms and nothing else (GPEN_CPU_CONV aside).
  Conv2dParams odd;
  odd.kh = odd.kw = 3;
  odd.pad_top = odd.pad_bottom = 0, odd.pad_left = odd.pad_right = 1;
  CHECK(cpu::choose_conv(cpu::conv2d_case(odd, Shape{1, 66, 64, 64}, Shape{1, 64, 64, 64}), {}).path !=
        cpu::ConvPath::winograd);
}
