// The polyphase Winograd stride-2 3x3 conv2d (kernels/cpu/winograd_s2.h) against a float64
// direct reference: odd sizes (outputs not multiples of m, clipped edge tiles), pad 0 (GPEN's
// encoder, input 2 Ho + 1) and pad 1 (RetinaFace R50), batch 2, two K blocks, an output-channel
// tail, several transformed-weight groups, bias + activation + residual (in place), 1 and 2
// threads. Tolerances as the stride-1 Winograd's (test_cpu_winograd.cpp) and the up conv's
// (test_cpu_winograd_up.cpp), in units of the mass (the sum of |products|): 1e-5 * mass + 1e-5
// for m = 4 (F(4, 2)'s A^T reaches 8, G has 1/6), 2e-6 * mass + 2e-6 for m = 2, 1e-6 for the
// direct path. Registered for the AVX2 and the AVX-512 path (tests/CMakeLists.txt).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/winograd_s2.h"
#include "weights/quant8.h"

using namespace gpen;
namespace wd = gpen::cpu::winograd_detail;

namespace {

struct Case {
  int64_t N, H, W, C, Co;
  int pad;
  bool bias, res, relu;
};

Conv2dParams params(const Case& k) {
  Conv2dParams p;
  p.kh = p.kw = 3;
  p.stride_h = p.stride_w = 2;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = k.pad;
  p.has_bias = k.bias, p.has_residual = k.res;
  if (k.relu) p.act.slope = 0.2f, p.act.gain = 1.4f;  // GPEN's fused leaky relu
  return p;
}

int64_t out_size(int64_t in, int pad) { return (in + 2 * pad - 3) / 2 + 1; }

// The polyphase Winograd tile the conv rule picks (kernels/cpu/conv_select.h; 0: another path).
int conv2d_wino_s2_tile(const Conv2dParams& p, const Shape& x, const Shape& y, const cpu::CpuOptions& o = {}) {
  const cpu::ConvChoice c = cpu::choose_conv(cpu::conv2d_case(p, x, y), o);
  return c.path == cpu::ConvPath::winograd_s2 ? c.tile : 0;
}

}  // namespace

TEST_CASE("winograd s2 takes 3x3 stride-2 ungrouped convs with pad 0 or 1 only") {
  Case k{1, 33, 33, 256, 256, 0, true, false, true};
  const Conv2dParams p = params(k);
  const Shape xs{1, 33, 33, 256}, ys{1, 16, 16, 256};
  Conv2dParams q = p;
  q.stride_h = q.stride_w = 1;
  CHECK(conv2d_wino_s2_tile(q, xs, Shape{1, 31, 31, 256}) == 0);
  q = p, q.groups = 2;
  CHECK(conv2d_wino_s2_tile(q, xs, ys) == 0);
  q = p, q.pad_top = q.pad_left = q.pad_bottom = q.pad_right = 2;
  CHECK(conv2d_wino_s2_tile(q, xs, Shape{1, 18, 18, 256}) == 0);
  q = p, q.split_rows = 16;  // banded ops stay on the path the unbanded op takes bit for bit
  CHECK(conv2d_wino_s2_tile(q, xs, ys) == 0);
  q = p, q.kh = q.kw = 5;
  CHECK(conv2d_wino_s2_tile(q, xs, Shape{1, 15, 15, 256}) == 0);
  cpu::CpuOptions direct;
  direct.conv = cpu::ConvMode::direct;
  CHECK(conv2d_wino_s2_tile(p, xs, ys, direct) == 0);
}

TEST_CASE("winograd s2 in auto mode: F(4x4) from 256 px at 32..64 channels, F(2x2) from 64 px at 16..64, from 32 px at 65..512 (AVX-512: from 16 px at 129..256), else direct") {
  Conv2dParams p = params(Case{1, 0, 0, 0, 0, 0, true, false, true});
  auto tile = [&](int64_t Ho, int64_t C, int64_t Co) {
    return conv2d_wino_s2_tile(p, Shape{1, 2 * Ho + 1, 2 * Ho + 1, C}, Shape{1, Ho, Ho, Co});
  };
  CHECK(tile(128, 32, 64) == 2);    // GPEN-256 ecd1
  CHECK(tile(64, 64, 128) == 2);    // ecd2
  CHECK(tile(32, 128, 256) == 2);   // ecd3
  const bool wide = cpu::cpu_isa() == cpu::Isa::avx512;
  CHECK(tile(16, 256, 256) == (wide ? 2 : 0));  // ecd4
  CHECK(tile(8, 256, 256) == 0);    // ecd5
  CHECK(tile(256, 64, 128) == 4);   // GPEN-512 ecd1
  CHECK(tile(128, 128, 256) == 2);  // ecd2
  CHECK(tile(64, 256, 512) == 2);   // ecd3
  CHECK(tile(32, 512, 512) == 2);   // ecd4
  CHECK(tile(16, 512, 512) == 0);   // ecd5
  CHECK(tile(32, 1024, 512) == 0);  // wider than any measured layer
  CHECK(tile(128, 16, 32) == 2);    // few channels: F(4x4)'s transforms outweigh its products
  CHECK(tile(32, 64, 128) == 0);    // a small map with few channels
  CHECK(tile(16, 128, 128) == 0);
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;  // R50 layer2.0 conv2 at 1024x768
  CHECK(conv2d_wino_s2_tile(p, Shape{1, 192, 256, 128}, Shape{1, 96, 128, 128}) == 2);
  CHECK(conv2d_wino_s2_tile(p, Shape{1, 96, 128, 256}, Shape{1, 48, 64, 256}) == 2);  // layer3.0 conv2
  CHECK(conv2d_wino_s2_tile(p, Shape{1, 48, 64, 512}, Shape{1, 24, 32, 512}) == 0);   // layer4.0 conv2
}

TEST_CASE("winograd s2 conv2d matches the float64 reference and the direct path") {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const Case cases[] = {{1, 19, 23, 32, 48, 0, true, true, true},    {2, 14, 11, 130, 35, 1, true, false, false},
                        {1, 17, 16, 3, 16, 0, false, true, true},    {1, 9, 9, 256, 256, 0, true, false, true},
                        {2, 13, 10, 64, 64, 1, true, true, true}};
  for (const Case& k : cases) {
    const Conv2dParams p = params(k);
    const int64_t Ho = out_size(k.H, k.pad), Wo = out_size(k.W, k.pad);
    const Shape xs{k.N, k.H, k.W, k.C}, ys{k.N, Ho, Wo, k.Co};
    std::vector<float> x(static_cast<size_t>(xs.numel())), w(static_cast<size_t>(9 * k.C * k.Co)),
        b(static_cast<size_t>(k.Co)), r(static_cast<size_t>(ys.numel()));
    for (auto& v : x) v = nd(rng);
    for (auto& v : w) v = nd(rng) / std::sqrt(float(9 * k.C));
    for (auto& v : b) v = 0.3f * nd(rng);
    for (auto& v : r) v = nd(rng);
    std::vector<double> ref(r.size()), mass(r.size());
    for (int64_t n = 0; n < k.N; ++n)
      for (int64_t oy = 0; oy < Ho; ++oy)
        for (int64_t ox = 0; ox < Wo; ++ox)
          for (int64_t o = 0; o < k.Co; ++o) {
            double acc = k.bias ? b[o] : 0.0, ms = std::abs(acc);
            for (int ky = 0; ky < 3; ++ky)
              for (int kx = 0; kx < 3; ++kx) {
                const int64_t iy = 2 * oy + ky - k.pad, ix = 2 * ox + kx - k.pad;
                if (iy < 0 || iy >= k.H || ix < 0 || ix >= k.W) continue;
                for (int64_t c = 0; c < k.C; ++c) {
                  const double t = double(x[((n * k.H + iy) * k.W + ix) * k.C + c]) * w[((ky * 3 + kx) * k.C + c) * k.Co + o];
                  acc += t, ms += std::abs(t);
                }
              }
            const size_t i = static_cast<size_t>(((n * Ho + oy) * Wo + ox) * k.Co + o);
            if (k.relu) acc = acc * (acc < 0 ? 0.2 * 1.4 : 1.4), ms *= 1.4;
            ref[i] = acc + (k.res ? r[i] : 0.0);
            mass[i] = ms + (k.res ? std::abs(r[i]) : 0.0);
          }
    TensorView xv = make_view(x.data(), DType::f32, xs), wv = make_view(w.data(), DType::f32, Shape{3, 3, k.C, k.Co});
    TensorView bv = make_view(b.data(), DType::f32, Shape{k.Co});
    auto worst = [&](const std::vector<float>& y, double rel) {
      double e = 0;
      for (size_t i = 0; i < y.size(); ++i) e = std::max(e, std::abs(y[i] - ref[i]) / (rel * mass[i] + rel));
      return e;
    };
    for (int m : {2, 4}) {
      const double rel = m == 4 ? 1e-5 : 2e-6;
      std::vector<float> got[2];
      for (int threads : {1, 2}) {
        cpu::set_num_threads(threads);
        std::vector<float> y = k.res ? r : std::vector<float>(r.size(), 7.0f);  // the residual is the output
        TensorView yv = make_view(y.data(), DType::f32, ys);
        std::vector<unsigned char> ws(wd::conv2d_wino_s2_workspace_bytes(m, xs, ys, threads), 0xAB);
        wd::conv2d_wino_s2(m, p, xv, wv, k.bias ? &bv : nullptr, k.res ? &yv : nullptr, yv, ws.data());
        const double e = worst(y, rel);
        MESSAGE("s2 F(" << m << ") " << k.N << "x" << k.H << "x" << k.W << "x" << k.C << " -> " << k.Co << " pad "
                        << k.pad << ", " << threads << " threads: " << e << " of its tolerance");
        CHECK(e <= 1.0);
        got[threads - 1] = std::move(y);
      }
      CHECK(got[0] == got[1]);  // each tile's sums do not depend on the split between threads
    }
    // The direct path on the same data: a band's conv (split_rows > 0) never takes Winograd.
    Conv2dParams pd = p;
    pd.split_rows = static_cast<int>(Ho);
    REQUIRE(conv2d_wino_s2_tile(pd, xs, ys) == 0);
    cpu::set_num_threads(0);
    std::vector<float> y = k.res ? r : std::vector<float>(r.size(), 7.0f);
    TensorView yv = make_view(y.data(), DType::f32, ys);
    std::vector<unsigned char> ws(cpu::conv2d_workspace_bytes(pd, xs, ys, 0), 0xAB);
    cpu::conv2d(pd, xv, wv, k.bias ? &bv : nullptr, k.res ? &yv : nullptr, yv, ws.data());
    CHECK(worst(y, 1e-6) <= 1.0);
  }
  cpu::set_num_threads(0);
}

TEST_CASE("winograd s2: 8-bit weights, per channel and per group, equal the f32 weights they dequantise to") {
  // The weight transform dequantises each code with the direct path's one multiply, picking the
  // group of reduction row (tap, c), so the transformed weights and all after are the same bits.
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const Case k{2, 13, 15, 70, 40, 1, true, false, true};
  const Conv2dParams p = params(k);
  const Shape xs{k.N, k.H, k.W, k.C}, ys{k.N, out_size(k.H, 1), out_size(k.W, 1), k.Co}, wsh{3, 3, k.C, k.Co};
  std::vector<float> x(static_cast<size_t>(xs.numel())), w(static_cast<size_t>(wsh.numel())), b(static_cast<size_t>(k.Co));
  for (auto& v : x) v = nd(rng);
  for (auto& v : w) v = nd(rng) / std::sqrt(float(9 * k.C));
  for (auto& v : b) v = nd(rng);
  const TensorView xv = make_view(x.data(), DType::f32, xs), bv = make_view(b.data(), DType::f32, Shape{k.Co});
  auto run = [&](int m, const TensorView& wv) {
    std::vector<float> y(static_cast<size_t>(ys.numel()));
    std::vector<unsigned char> ws(wd::conv2d_wino_s2_workspace_bytes(m, xs, ys, 0));
    wd::conv2d_wino_s2(m, p, xv, wv, &bv, nullptr, make_view(y.data(), DType::f32, ys), ws.data());
    return y;
  };
  for (DType dt : {DType::i8, DType::f8e4m3})
    for (int64_t group : {int64_t{0}, int64_t{64}}) {
      CAPTURE(dtype_name(dt));
      CAPTURE(group);
      std::vector<uint8_t> codes;
      std::vector<float> scale, deq;
      int64_t qgroup = 0;
      if (group == 0) {
        const Quantized8 q = quantize8(w.data(), wsh.numel(), k.Co, dt);
        codes = q.codes, scale = q.scale;
        deq = dequantize8(q.codes.data(), q.scale.data(), wsh.numel(), k.Co, dt);
      } else {
        const Quantized8Grouped q = quantize8_grouped(w.data(), wsh, dt, group);
        REQUIRE(q.group > 0);
        codes = q.codes, scale = q.scale, qgroup = q.group;
        deq = dequantize8_grouped(q.codes.data(), q.scale.data(), wsh, dt, q.group);
      }
      TensorView w8 = make_view(codes.data(), dt, wsh);
      w8.qscale = scale.data();
      w8.qgroup = qgroup;
      const TensorView w32 = make_view(deq.data(), DType::f32, wsh);
      for (int m : {2, 4}) {
        const std::vector<float> got8 = run(m, w8), got32 = run(m, w32);
        CHECK(std::memcmp(got8.data(), got32.data(), got8.size() * sizeof(float)) == 0);
      }
    }
}
