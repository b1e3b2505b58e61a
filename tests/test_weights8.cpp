// 8-bit weights (gpen convert --dtype int8|fp8): the codecs, the converter's round trip, the CPU
// GEMM paths fed 8-bit weights against the same paths fed the dequantised f32 weights (equal to
// the bit: the dequantisation happens in the operand packing, with the same f32 multiply), and a
// whole synthetic GPEN's accuracy against its fp32 weights.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "converter/convert.h"
#include "engine/core/error.h"
#include "engine/core/quant8.h"
#include "engine/models/gpen_model.h"
#include "engine/photo/output_diff.h"
#include "engine/runtime/device.h"
#include "kernels/cpu/ops.h"
#include "weights/gpw.h"
#include "weights/quant8.h"

namespace fs = std::filesystem;
using namespace gpen;

namespace {

const std::string kDir = GPEN_FIXTURE_DIR "/checkpoints/";

std::vector<float> randn(size_t n, uint32_t seed, float sd) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

// Half a quantisation step of the value v (dequantised) in a channel of scale s.
double half_step(DType dt, float v, float s) {
  if (dt == DType::i8) return 0.5 * s;
  const double a = std::fabs(v / s);
  // e4m3: 3 mantissa bits; below 2^-6 the subnormal step 2^-9.
  const double e = a < 0.015625 ? -6 : std::floor(std::log2(a));
  return 0.5 * std::ldexp(1.0, static_cast<int>(e) - 3) * s;
}

struct Weight8 {
  Quantized8 q;
  std::vector<float> deq;
  TensorView v8, vf;
};

Weight8 make_weight8(const Shape& s, DType dt, uint32_t seed) {
  Weight8 w;
  const int64_t n = s.numel(), cout = s[s.rank - 1];
  const std::vector<float> f = randn(static_cast<size_t>(n), seed, 1.0f / std::sqrt(static_cast<float>(n / cout)));
  w.q = quantize8(f.data(), n, cout, dt);
  w.deq = dequantize8(w.q.codes.data(), w.q.scale.data(), n, cout, dt);
  w.v8 = make_view(w.q.codes.data(), dt, s);
  w.v8.qscale = w.q.scale.data();
  w.vf = make_view(w.deq.data(), DType::f32, s);
  return w;
}

}  // namespace

TEST_CASE("weights8: e4m3 decoding and nearest-even encoding") {
  CHECK(f8e4m3_to_f32(0x00) == 0.0f);
  CHECK(f8e4m3_to_f32(0x01) == std::ldexp(1.0f, -9));  // smallest subnormal
  CHECK(f8e4m3_to_f32(0x07) == 7 * std::ldexp(1.0f, -9));
  CHECK(f8e4m3_to_f32(0x08) == std::ldexp(1.0f, -6));  // smallest normal
  CHECK(f8e4m3_to_f32(0x38) == 1.0f);
  CHECK(f8e4m3_to_f32(0x7e) == 448.0f);
  CHECK(f8e4m3_to_f32(0xb8) == -1.0f);
  for (int c = 0; c < 0x7f; ++c) {
    CAPTURE(c);
    CHECK(f32_to_f8e4m3(f8e4m3_to_f32(static_cast<uint8_t>(c))) == c);
    CHECK(f32_to_f8e4m3(-f8e4m3_to_f32(static_cast<uint8_t>(c))) == (c ? (c | 0x80) : 0));
  }
  CHECK(f32_to_f8e4m3(1.0625f) == 0x38);   // tie between 1 (even) and 1.125
  CHECK(f32_to_f8e4m3(1.1875f) == 0x3a);   // tie between 1.125 and 1.25 (even)
  CHECK(f32_to_f8e4m3(1000.0f) == 0x7e);   // saturates
  CHECK(f32_to_f8e4m3(-1e9f) == 0xfe);
  CHECK(i8_code_to_f32(0x81) == -127.0f);
}

TEST_CASE("weights8: quantize8 puts every value within half a step, per output channel") {
  const int64_t cout = 24, n = 9 * 40 * cout;
  std::vector<float> w = randn(static_cast<size_t>(n), 3, 0.05f);
  for (int64_t i = 5; i < n; i += cout) w[static_cast<size_t>(i)] *= 20.0f;  // one loud channel
  for (int64_t i = 7; i < n; i += cout) w[static_cast<size_t>(i)] = 0.0f;    // one silent channel
  for (DType dt : {DType::i8, DType::f8e4m3}) {
    CAPTURE(dtype_name(dt));
    const Quantized8 q = quantize8(w.data(), n, cout, dt);
    REQUIRE(q.scale.size() == static_cast<size_t>(cout));
    CHECK(q.scale[7] == 0.0f);
    CHECK(q.scale[5] > 10.0f * q.scale[4]);  // the loud channel does not coarsen the others
    const std::vector<float> d = dequantize8(q.codes.data(), q.scale.data(), n, cout, dt);
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float s = q.scale[static_cast<size_t>(i % cout)];
      const double err = std::fabs(static_cast<double>(d[i]) - w[i]);
      if (s > 0) worst = std::max(worst, err / (half_step(dt, d[i], s) * (1 + 1e-6) + 1e-30));
      else CHECK(d[i] == 0.0f);
    }
    CHECK(worst <= 1.0);
    CHECK_THROWS_AS(quantize8(w.data(), n, 7, dt), Error);
  }
  CHECK_THROWS_AS(quantize8(w.data(), n, cout, DType::f16), Error);
}

TEST_CASE("weights8: convert --dtype int8 / fp8 stores codes and scales, within half a step of fp32") {
  const fs::path d = fs::temp_directory_path() / ("gpen_test_weights8_" + std::to_string(::getpid()));
  fs::create_directories(d);
  const std::string src = kDir + "gpen_s64.zip.pth";
  conv::convert(src, (d / "f32.gpw").string());
  const GpwFile ref = GpwFile::open((d / "f32.gpw").string());
  for (DType dt : {DType::i8, DType::f8e4m3}) {
    CAPTURE(dtype_name(dt));
    conv::ConvertOptions o;
    o.dtype = dt;
    const fs::path out = d / (std::string("q_") + dtype_name(dt) + ".gpw");
    conv::convert(src, out.string(), o);
    const GpwFile f = GpwFile::open(out.string());
    CHECK(f.storage_dtype() == dt);
    CHECK(f.file_bytes() < ref.file_bytes());
    int quantised = 0;
    for (const auto& e : f.tensors()) {
      CAPTURE(e.name);
      const bool q = dtype_is_8bit_weight(e.view.dtype);
      auto ends = [&](const char* suf) {
        const size_t n = std::strlen(suf);
        return e.name.size() >= n && e.name.compare(e.name.size() - n, n, suf) == 0;
      };
      const bool big_conv = ends(".conv.weight") ? e.name.find("to_rgb") == std::string::npos
                                                 : e.name.rfind("ecd", 0) == 0 && e.name.rfind("ecd0.", 0) != 0 &&
                                                       ends(".weight");
      CHECK(q == big_conv);
      if (!q) {
        CHECK(e.view.dtype == DType::f32);
        continue;
      }
      ++quantised;
      CHECK(e.view.dtype == dt);
      const TensorView& r = ref.at(e.name);
      const TensorView& s = f.at(e.name + ".qscale");
      const int64_t cout = e.view.dim(e.view.rank() - 1);
      REQUIRE(s.numel() == cout);
      CHECK(e.view.qscale == s.f32());  // linked on open
      const std::vector<float> deq = dequantize8(e.view.as<const uint8_t>(), s.f32(), e.view.numel(), cout, dt);
      double worst = 0;
      for (int64_t i = 0; i < e.view.numel(); ++i) {
        const float sc = s.f32()[i % cout];
        worst = std::max(worst, std::fabs(deq[i] - r.f32()[i]) / (half_step(dt, deq[i], sc) * (1 + 1e-6) + 1e-30));
      }
      CHECK(worst <= 1.0);
      // The scale maps the channel's largest magnitude onto the largest code.
      std::vector<float> amax(static_cast<size_t>(cout), 0.0f);
      for (int64_t i = 0; i < r.numel(); ++i) amax[i % cout] = std::max(amax[i % cout], std::fabs(r.f32()[i]));
      for (int64_t o = 0; o < cout; ++o)
        CHECK(s.f32()[o] == doctest::Approx(amax[o] / (dt == DType::i8 ? 127.0 : 448.0)).epsilon(1e-6));
    }
    CHECK(quantised == 4 + 1 + 8);  // GPEN 64: encoder 3x3 convs ecd1..4, conv1, convs.0..7
  }
  // 8-bit is for GPEN only; the error names the model.
  conv::ConvertOptions o;
  o.dtype = DType::i8;
  try {
    conv::convert(kDir + "mnet.zip.pth", (d / "mnet.gpw").string(), o);
    FAIL("RetinaFace int8 accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("GPEN models only") != std::string::npos);
  }
  CHECK(!fs::exists(d / "mnet.gpw"));
  fs::remove_all(d);
}

TEST_CASE("weights8: a .gpw with an 8-bit tensor but no scales is refused on open") {
  GpwWriter w("gpen", nlohmann::json::object());
  std::vector<uint8_t> codes(3 * 3 * 4 * 8, 1);
  w.add_copy("a.weight", DType::i8, Shape{3, 3, 4, 8}, codes.data());
  const fs::path p = fs::temp_directory_path() / ("gpen_w8_noscale_" + std::to_string(::getpid()) + ".gpw");
  w.write(p.string());
  try {
    (void)GpwFile::open(p.string());
    FAIL("opened");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("no scale tensor 'a.weight.qscale'") != std::string::npos);
  }
  fs::remove(p);
}

TEST_CASE("weights8: CPU modconv and conv2d on 8-bit weights equal the f32 paths on the dequantised weights") {
  struct MC {
    int n, h, w, c, cout, k;
    bool up;
  } mcs[] = {{2, 9, 11, 40, 24, 3, false},   // packed B panels
             {1, 4, 4, 32, 40, 3, false},    // tiny output: B read in place (direct mode)
             {2, 5, 6, 24, 20, 3, true},     // transposed, by phase
             {1, 7, 5, 48, 3, 1, false},     // ToRGB-like
             {1, 48, 50, 32, 40, 3, false},   // Winograd (the default from 48 x 48, >= 32 channels)
             {1, 16, 16, 256, 136, 3, false}};  // Winograd's fused form (16 x 16, C >= 256, Co >= 128)
  for (DType dt : {DType::i8, DType::f8e4m3}) {
    for (const MC& c : mcs) {
      CAPTURE(dtype_name(dt));
      CAPTURE(c.h);
      const Shape xs{c.n, c.h, c.w, c.c};
      const int ho = c.up ? 2 * c.h + 1 : c.h, wo = c.up ? 2 * c.w + 1 : c.w;
      const Shape ys{c.n, ho, wo, c.cout};
      std::vector<float> x = randn(static_cast<size_t>(xs.numel()), 1, 1.0f), s = randn(static_cast<size_t>(c.n * c.c), 2, 1.0f);
      std::vector<float> dd = randn(static_cast<size_t>(c.n * c.cout), 3, 0.3f), b = randn(static_cast<size_t>(c.cout), 4, 0.1f);
      for (auto& v : dd) v = 1.0f + std::fabs(v);
      Weight8 w = make_weight8(Shape{c.k, c.k, c.c, c.cout}, dt, 5);
      const TensorView xv = make_view(x.data(), DType::f32, xs), sv = make_view(s.data(), DType::f32, Shape{c.n, c.c});
      const TensorView dv = make_view(dd.data(), DType::f32, Shape{c.n, c.cout}), bv = make_view(b.data(), DType::f32, Shape{c.cout});
      ModConvParams p;
      p.k = c.k, p.up = c.up;
      p.has_demod = p.has_bias = !c.up;
      if (!c.up) p.act = Activation::scaled_leaky();
      std::vector<float> y8(static_cast<size_t>(ys.numel())), yf(y8.size());
      std::vector<unsigned char> ws(cpu::modconv_workspace_bytes(p, xs, ys, 0));
      for (int pass = 0; pass < 2; ++pass) {
        cpu::ModConvArgs a;
        a.x = &xv, a.s = &sv, a.w = pass ? &w.vf : &w.v8;
        if (!c.up) a.d = &dv, a.bias = &bv;
        cpu::modconv(p, a, make_view(pass ? yf.data() : y8.data(), DType::f32, ys), ws.data());
      }
      CHECK(std::memcmp(y8.data(), yf.data(), y8.size() * 4) == 0);
    }
    // conv2d: the GEMM path (many channels), the direct path (few output channels) and Winograd.
    struct CC {
      int h, cin, cout, k, stride;
    } ccs[] = {{17, 24, 48, 3, 2}, {12, 16, 8, 3, 1}, {9, 40, 72, 1, 1}, {7, 24, 100, 3, 1},
               {48, 32, 40, 3, 1}};  // the last: Winograd
    for (const CC& c : ccs) {
      CAPTURE(c.cout);
      Conv2dParams p;
      p.kh = p.kw = c.k;
      p.stride_h = p.stride_w = c.stride;
      p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = c.k / 2;
      p.has_bias = true;
      p.act = Activation::scaled_leaky();
      const Shape xs{2, c.h, c.h, c.cin};
      const int ho = (c.h + 2 * (c.k / 2) - c.k) / c.stride + 1;
      const Shape ys{2, ho, ho, c.cout};
      std::vector<float> x = randn(static_cast<size_t>(xs.numel()), 7, 1.0f), b = randn(static_cast<size_t>(c.cout), 8, 0.1f);
      Weight8 w = make_weight8(Shape{c.k, c.k, c.cin, c.cout}, dt, 9);
      const TensorView xv = make_view(x.data(), DType::f32, xs), bv = make_view(b.data(), DType::f32, Shape{c.cout});
      std::vector<float> y8(static_cast<size_t>(ys.numel())), yf(y8.size());
      std::vector<unsigned char> ws(cpu::conv2d_workspace_bytes(p, xs, ys, 0));
      cpu::conv2d(p, xv, w.v8, &bv, nullptr, make_view(y8.data(), DType::f32, ys), ws.data());
      cpu::conv2d(p, xv, w.vf, &bv, nullptr, make_view(yf.data(), DType::f32, ys), ws.data());
      CHECK(std::memcmp(y8.data(), yf.data(), y8.size() * 4) == 0);
    }
  }
  // An 8-bit view without its scales is an error, not a crash.
  Weight8 w = make_weight8(Shape{3, 3, 8, 8}, DType::i8, 1);
  TensorView bad = w.v8;
  bad.qscale = nullptr;
  std::vector<float> x(2 * 5 * 5 * 8, 1.0f), y(x.size());
  Conv2dParams p;
  p.kh = p.kw = 3;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  std::vector<unsigned char> ws(cpu::conv2d_workspace_bytes(p, Shape{2, 5, 5, 8}, Shape{2, 5, 5, 8}, 0));
  CHECK_THROWS_AS(cpu::conv2d(p, make_view(x.data(), DType::f32, Shape{2, 5, 5, 8}), bad, nullptr, nullptr,
                              make_view(y.data(), DType::f32, Shape{2, 5, 5, 8}), ws.data()),
                  Error);
}

TEST_CASE("weights8: the plan counts 8-bit weights (codes, scales) and keeps the rest in the precision") {
  GpenConfig c;  // GPEN-512: the figures of docs/memory.md, "8-bit weights"
  c.act_dtype = c.weight_dtype = DType::f16;
  const size_t fp16 = build_gpen_graph(c).graph.weights_bytes();
  CHECK(fp16 == size_t{151955534});
  for (DType q : {DType::i8, DType::f8e4m3}) {
    c.quant8 = q;
    const GpenGraph g = build_gpen_graph(c);
    CHECK(g.graph.weights_bytes() == size_t{96250958});
    size_t codes = 0, scales = 0;
    for (const TensorDesc& t : g.graph.tensors()) {
      if (t.kind != TensorKind::Weight) continue;
      if (t.dtype == q) {
        codes += t.bytes();
        // Every 8-bit tensor has its scales, one f32 per output channel.
        bool found = false;
        for (const TensorDesc& u : g.graph.tensors())
          if (u.name == t.name + ".qscale") found = u.dtype == DType::f32 && u.shape.numel() == t.shape[3];
        CHECK(found);
      } else if (t.name.size() > 7 && t.name.compare(t.name.size() - 7, 7, ".qscale") == 0) {
        scales += t.bytes();
      }
    }
    CHECK(codes == size_t{55738368});  // every 3x3 conv weight of GPEN-BFR-512, one byte each
    CHECK(scales == size_t{8448 * 4});
  }
}

TEST_CASE("weights8: a small GPEN on the CPU with int8 / fp8 conv weights against its fp32 weights") {
  GpenConfig c;
  c.size = 32;
  c.channel_multiplier = 1;
  c.narrow = 1.0 / 32;
  c.style_dim = 16;
  std::vector<float> in(32 * 32 * 3);
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& v : in) v = u(rng);
  auto cpu = make_cpu_backend();
  auto run = [&](DType q) {
    GpenConfig qc = c;
    qc.quant8 = q;
    auto m = GpenModel::synthetic(qc, *cpu, 9);
    m->prepare(1);
    std::vector<float> out(in.size());
    m->run(in.data(), out.data());
    return out;
  };
  const std::vector<float> ref = run(DType::f32);
  // Measured: int8 54.8 dB (max abs 8.5e-3), fp8 48.4 dB (1.6e-2); the same bars as
  // test_cuda_weights8 (int8 above the bf16 path's 52.6 dB).
  for (auto [q, min_psnr] : {std::pair{DType::i8, 53.5}, std::pair{DType::f8e4m3, 46.0}}) {
    const std::vector<float> out = run(q);
    const OutputDiff d = compare_outputs(out.data(), ref.data(), 1, 32);
    CAPTURE(std::string(dtype_name(q)));
    CHECK(d.nonfinite == 0);
    CHECK(d.psnr_8bit >= min_psnr);
    CHECK(d.max_abs > 0.0);  // the weights did change
  }
}
