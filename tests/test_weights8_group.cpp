// 8-bit weights, second part: scales per group of reduction rows (`--group-size`) and 8-bit dense
// layers (`--dense-dtype`). The grouped quantiser's error bound, the format's scale shapes (and the
// refusal of malformed ones, naming the file), the CPU kernels on grouped / dense 8-bit weights
// against the f32 paths on the dequantised weights (bit for bit), whole converted models against an
// fp32 file holding their dequantised weights (old per-channel files included), and the plan's
// bytes against the converted file's.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "converter/convert.h"
#include "converter/layouts.h"
#include "engine/core/error.h"
#include "engine/models/gpen_model.h"
#include "engine/runtime/device.h"
#include "kernels/cpu/ops.h"
#include "weights/gpw.h"
#include "weights/gpw_writer.h"
#include "weights/quant8.h"

namespace fs = std::filesystem;
using namespace gpen;

namespace {


std::vector<float> randn(size_t n, uint32_t seed, float sd) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

struct W8 {
  Quantized8Grouped q;
  std::vector<float> deq;
  TensorView v8, vf;
};

W8 make_w8(const Shape& s, DType dt, int64_t group, uint32_t seed) {
  W8 w;
  const Q8Axes a = q8_axes(s);
  const std::vector<float> f = randn(static_cast<size_t>(s.numel()), seed, 1.0f / std::sqrt(static_cast<float>(a.k)));
  w.q = quantize8_grouped(f.data(), s, dt, group);
  w.deq = dequantize8_grouped(w.q.codes.data(), w.q.scale.data(), s, dt, w.q.group);
  w.v8 = make_view(w.q.codes.data(), dt, s);
  w.v8.qscale = w.q.scale.data();
  w.v8.qgroup = w.q.group;
  w.vf = make_view(w.deq.data(), DType::f32, s);
  return w;
}

// A .gpw holding the dequantised weights of the 8-bit file `src` as f32 (no scale tensors).
void write_dequantised(const std::string& src, const std::string& out) {
  const GpwFile f = GpwFile::open(src);
  GpwWriter w(f.arch(), f.config());
  std::vector<std::vector<float>> keep;
  for (const auto& e : f.tensors()) {
    if (e.name.size() > 7 && e.name.compare(e.name.size() - 7, 7, ".qscale") == 0) continue;
    if (!dtype_is_8bit_weight(e.view.dtype)) {
      w.add_copy(e.name, e.view.dtype, e.view.shape, e.view.data);
      continue;
    }
    keep.push_back(dequantize8_grouped(e.view.as<const uint8_t>(), e.view.qscale, e.view.shape, e.view.dtype,
                                       e.view.qgroup));
    w.add_copy(e.name, DType::f32, e.view.shape, keep.back().data());
  }
  w.write(out);
}

// A GPEN checkpoint in the official layout (size 32, channel multiplier 1, narrow 1/32, style_dim
// 16, 8 MLP layers: what the engine's graph builds) with seeded random values, as safetensors.
void write_checkpoint(const std::string& path) {
  conv::GpenConfig c;
  c.size = 32;
  c.channel_multiplier = 1;
  c.narrow = 1.0 / 32;
  c.style_dim = 16;
  nlohmann::json h = nlohmann::json::object();
  std::vector<float> data;
  std::mt19937 rng(17);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (const conv::TensorSpec& t : conv::gpen_layout(c)) {
    if (t.optional) continue;
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    const size_t off = data.size() * 4;
    const bool bias = t.name.find("bias") != std::string::npos, noise = t.name.find("noise") != std::string::npos;
    for (int64_t i = 0; i < n; ++i)
      data.push_back(t.name.find("modulation.bias") != std::string::npos ? 1.0f : (bias || noise ? 0.1f : 1.0f) * nd(rng));
    h[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {off, data.size() * 4}}};
  }
  std::string text = h.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream f(path, std::ios::binary);
  const uint64_t len = text.size();
  f.write(reinterpret_cast<const char*>(&len), 8);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size() * 4));
}

std::vector<float> run_file(const std::string& path, const std::vector<float>& in) {
  auto cpu = make_cpu_backend();
  auto m = GpenModel::open(path, *cpu);
  m->prepare(1);
  std::vector<float> out(in.size());
  m->run(in.data(), out.data());
  return out;
}

}  // namespace

TEST_CASE("weights8 groups: group sizes and scale shapes and their validation") {
  CHECK(q8_group_for(576, 0) == 0);
  CHECK(q8_group_for(576, 64) == 64);    // 9 groups of 64
  CHECK(q8_group_for(72, 32) == 24);     // 3 groups, balanced: 24 rows each
  CHECK(q8_group_for(100, 32) == 25);    // 4 groups of 25
  CHECK(q8_group_for(48, 64) == 0);      // one group: per channel
  const Shape conv{3, 3, 64, 40}, dense{24, 512};
  CHECK(q8_scale_shape(conv, 0) == Shape{40});
  CHECK(q8_scale_shape(conv, 64) == Shape{9, 40});
  CHECK(q8_scale_shape(dense, 0) == Shape{24});  // dense: one scale per output row
  CHECK(q8_scale_shape(dense, 64) == Shape{8, 24});
  int64_t g = -1;
  CHECK((q8_group_of(conv, Shape{40}, &g) && g == 0));
  CHECK((q8_group_of(conv, Shape{9, 40}, &g) && g == 64));
  CHECK((q8_group_of(conv, Shape{1, 40}, &g) && g == 0));
  CHECK((q8_group_of(dense, Shape{8, 24}, &g) && g == 64));
  CHECK(!q8_group_of(conv, Shape{64}, &g));        // not the output axis
  CHECK(!q8_group_of(conv, Shape{577, 40}, &g));   // more groups than rows
  CHECK(!q8_group_of(Shape{1, 1, 10, 4}, Shape{6, 4}, &g));  // groups of 2 rows make 5 groups of 10, not 6
  CHECK(!q8_group_of(Shape{3, 3, 10, 4}, Shape{4, 3}, &g));
  CHECK(!q8_group_of(dense, Shape{512}, &g));      // dense scales run along the output rows
}

TEST_CASE("weights8 groups: every value within half a step of its group scale and request 0 is per channel") {
  const Shape s{3, 3, 40, 24};
  std::vector<float> w = randn(static_cast<size_t>(s.numel()), 3, 0.05f);
  for (int64_t i = 0; i < 24 * 40; ++i) w[static_cast<size_t>(i)] *= 30.0f;  // a loud first tap
  for (DType dt : {DType::i8, DType::f8e4m3}) {
    CAPTURE(dtype_name(dt));
    const Quantized8 pc = quantize8(w.data(), s.numel(), 24, dt);
    const Quantized8Grouped g0 = quantize8_grouped(w.data(), s, dt, 0);
    CHECK(g0.group == 0);
    CHECK(g0.codes == pc.codes);
    CHECK(g0.scale == pc.scale);
    const Quantized8Grouped g = quantize8_grouped(w.data(), s, dt, 40);  // one group per tap
    REQUIRE(g.group == 40);
    REQUIRE(g.scale.size() == size_t{9 * 24});
    const std::vector<float> d = dequantize8_grouped(g.codes.data(), g.scale.data(), s, dt, g.group);
    double err_g = 0, err_pc = 0;
    const std::vector<float> dpc = dequantize8(pc.codes.data(), pc.scale.data(), s.numel(), 24, dt);
    for (int64_t i = 0; i < s.numel(); ++i) {
      const int64_t k = i / 24, o = i % 24;
      const float sc = g.scale[static_cast<size_t>((k / 40) * 24 + o)];
      // int8: half a step; e4m3: half a step of 3 mantissa bits relative to the value, or of the
      // subnormal spacing.
      const double bound = dt == DType::i8 ? 0.5 * sc
                                           : std::max(std::fabs(static_cast<double>(w[i])) / 16, 0.5 * std::ldexp(sc, -9));
      CHECK(std::fabs(d[i] - w[i]) <= bound * (1 + 1e-6) + 1e-30);
      if (k < 40) continue;  // the loud tap: its own scale either way
      err_g += std::pow(d[i] - w[i], 2);
      err_pc += std::pow(dpc[i] - w[i], 2);
    }
    // The loud tap no longer coarsens the eight quiet ones: int8's step there is ~30x finer (the
    // squared error ~900x smaller); e4m3 is relative anyway, so it only must not get worse.
    if (dt == DType::i8) CHECK(err_g < 0.01 * err_pc);
    else CHECK(err_g <= err_pc);
  }
}

TEST_CASE("weights8 groups: CPU modconv and conv2d and Winograd and dense on grouped or dense 8-bit weights equal f32") {
  for (DType dt : {DType::i8, DType::f8e4m3}) {
    for (int64_t group : {int64_t{32}, int64_t{50}}) {
      CAPTURE(dtype_name(dt));
      CAPTURE(group);
      struct MC {
        int n, h, w, c, cout, k;
        bool up;
      } mcs[] = {{2, 9, 11, 40, 24, 3, false}, {1, 4, 4, 32, 40, 3, false}, {2, 5, 6, 24, 20, 3, true},
                 {1, 48, 50, 32, 40, 3, false}};  // packed, direct-B, transposed, Winograd
      for (const MC& c : mcs) {
        CAPTURE(c.h);
        const Shape xs{c.n, c.h, c.w, c.c};
        const int ho = c.up ? 2 * c.h + 1 : c.h, wo = c.up ? 2 * c.w + 1 : c.w;
        const Shape ys{c.n, ho, wo, c.cout};
        std::vector<float> x = randn(static_cast<size_t>(xs.numel()), 1, 1.0f), s = randn(static_cast<size_t>(c.n * c.c), 2, 1.0f);
        std::vector<float> dd(static_cast<size_t>(c.n * c.cout), 1.3f), b = randn(static_cast<size_t>(c.cout), 4, 0.1f);
        W8 w = make_w8(Shape{c.k, c.k, c.c, c.cout}, dt, group, 5);
        REQUIRE(w.q.group > 0);
        const TensorView xv = make_view(x.data(), DType::f32, xs), sv = make_view(s.data(), DType::f32, Shape{c.n, c.c});
        const TensorView dv = make_view(dd.data(), DType::f32, Shape{c.n, c.cout}), bv = make_view(b.data(), DType::f32, Shape{c.cout});
        ModConvParams p;
        p.k = c.k, p.up = c.up;
        p.has_demod = p.has_bias = !c.up;
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
      struct CC {
        int h, cin, cout, stride;
      } ccs[] = {{17, 24, 48, 2}, {12, 16, 8, 1}, {7, 24, 100, 1}, {48, 32, 40, 1}};  // GEMM, direct, GEMM, Winograd
      for (const CC& c : ccs) {
        CAPTURE(c.cout);
        Conv2dParams p;
        p.kh = p.kw = 3;
        p.stride_h = p.stride_w = c.stride;
        p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
        p.has_bias = true;
        const Shape xs{1, c.h, c.h, c.cin};
        const int ho = (c.h - 1) / c.stride + 1;
        const Shape ys{1, ho, ho, c.cout};
        std::vector<float> x = randn(static_cast<size_t>(xs.numel()), 7, 1.0f), b = randn(static_cast<size_t>(c.cout), 8, 0.1f);
        W8 w = make_w8(Shape{3, 3, c.cin, c.cout}, dt, group, 9);
        const TensorView xv = make_view(x.data(), DType::f32, xs), bv = make_view(b.data(), DType::f32, Shape{c.cout});
        std::vector<float> y8(static_cast<size_t>(ys.numel())), yf(y8.size());
        std::vector<unsigned char> ws(cpu::conv2d_workspace_bytes(p, xs, ys, 0));
        cpu::conv2d(p, xv, w.v8, &bv, nullptr, make_view(y8.data(), DType::f32, ys), ws.data());
        cpu::conv2d(p, xv, w.vf, &bv, nullptr, make_view(yf.data(), DType::f32, ys), ws.data());
        CHECK(std::memcmp(y8.data(), yf.data(), y8.size() * 4) == 0);
      }
    }
    // dense: per output row and per group, a large one (threaded) and a small one.
    for (auto [out, in, group] : {std::tuple{512, 512, 0}, std::tuple{64, 8192, 64}, std::tuple{24, 40, 16}}) {
      CAPTURE(in);
      W8 w = make_w8(Shape{out, in}, dt, group, 11);
      std::vector<float> x = randn(static_cast<size_t>(2 * in), 12, 1.0f), b = randn(static_cast<size_t>(out), 13, 0.1f);
      DenseParams p;
      p.has_bias = true;
      p.b_scale = 0.5f;
      p.act = Activation::scaled_leaky();
      const TensorView xv = make_view(x.data(), DType::f32, Shape{2, in}), bv = make_view(b.data(), DType::f32, Shape{out});
      std::vector<float> y8(static_cast<size_t>(2 * out)), yf(y8.size());
      cpu::dense(p, xv, w.v8, &bv, make_view(y8.data(), DType::f32, Shape{2, out}));
      cpu::dense(p, xv, w.vf, &bv, make_view(yf.data(), DType::f32, Shape{2, out}));
      CHECK(std::memcmp(y8.data(), yf.data(), y8.size() * 4) == 0);
    }
  }
  W8 w = make_w8(Shape{8, 16}, DType::i8, 0, 1);
  w.v8.qscale = nullptr;
  std::vector<float> x(16, 1.0f), y(8);
  CHECK_THROWS_AS(cpu::dense(DenseParams{}, make_view(x.data(), DType::f32, Shape{1, 16}), w.v8, nullptr,
                             make_view(y.data(), DType::f32, Shape{1, 8})),
                  Error);
}

TEST_CASE("weights8 groups: converted models equal an fp32 file of their dequantised weights and the plan counts them") {
  const fs::path d = fs::temp_directory_path() / ("gpen_test_w8group_" + std::to_string(::getpid()));
  fs::create_directories(d);
  const std::string src = (d / "g32.safetensors").string();
  write_checkpoint(src);
  std::vector<float> in(32 * 32 * 3);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& v : in) v = u(rng);
  struct Case {
    DType dt, dense;
    int64_t group;
    int layers;
  } cases[] = {{DType::i8, DType::f32, 0, kDense8All},  // the per-channel format of the first 8-bit files
               {DType::i8, DType::i8, 32, kDense8All},
               {DType::f8e4m3, DType::f8e4m3, 16, kDense8All},
               {DType::i8, DType::i8, 0, kDense8All},
               {DType::i8, DType::i8, 64, kDense8Modulation},
               {DType::i8, DType::i8, 0, kDense8FinalLinear | kDense8StyleMlp}};
  for (const Case& c : cases) {
    CAPTURE(dtype_name(c.dt));
    CAPTURE(c.group);
    conv::ConvertOptions o;
    o.dtype = c.dt;
    o.dense_dtype = c.dense;
    o.q8_group = c.group;
    o.dense_layers = c.layers;
    const std::string q = (d / "q.gpw").string(), f = (d / "deq.gpw").string();
    conv::convert(src, q, o);
    const GpwFile qf = GpwFile::open(q);
    CHECK(qf.config().value("quant8_group", 0) == c.group);
    int grouped = 0, dense8 = 0, dense = 0;
    for (const auto& e : qf.tensors()) {
      // The dense weights are exactly the rank-2 `.weight` tensors (demod_q tables end otherwise).
      const bool mod = e.name.find(".modulation.") != std::string::npos;
      const int bit = mod ? kDense8Modulation : e.name.rfind("final_linear", 0) == 0 ? kDense8FinalLinear : kDense8StyleMlp;
      dense += e.view.rank() == 2 && e.name.size() > 7 && e.name.compare(e.name.size() - 7, 7, ".weight") == 0 &&
               (c.layers & bit);
      if (!dtype_is_8bit_weight(e.view.dtype)) continue;
      CHECK(e.view.qscale != nullptr);
      grouped += e.view.qgroup > 0;
      dense8 += e.view.rank() == 2;
    }
    CHECK((grouped > 0) == (c.group > 0));
    CHECK(dense >= (c.layers == kDense8All ? 10 : 1));  // the dense layers --dense-layers names
    CHECK(dense8 == (c.dense == DType::f32 ? 0 : dense));
    // The plan's weights are the file's tensors (the CPU maps them as they are).
    const GpenConfig cfg = gpen_config_from_gpw(qf);
    if (c.dense != DType::f32) CHECK(cfg.dense8_layers == c.layers);
    GpenConfig pc = cfg;
    pc.quant8 = c.dt;
    CHECK(build_gpen_graph(pc).graph.weights_bytes() == qf.tensor_bytes());
    write_dequantised(q, f);
    CHECK(run_file(q, in) == run_file(f, in));
  }
  fs::remove_all(d);
}

TEST_CASE("weights8 groups: malformed scale tensors are refused on open naming the file and the shapes") {
  const fs::path p = fs::temp_directory_path() / ("gpen_w8_badscale_" + std::to_string(::getpid()) + ".gpw");
  struct Bad {
    Shape w, s;
    DType sdt;
    const char* expect;
  } bads[] = {{Shape{3, 3, 4, 8}, Shape{5}, DType::f32, "needs f32 [8] (per output channel) or [G, 8]"},
              {Shape{3, 3, 4, 8}, Shape{37, 8}, DType::f32, "is [37, 8] f32"},
              {Shape{3, 3, 4, 8}, Shape{8}, DType::f16, "is [8] f16"},
              {Shape{8, 16}, Shape{16}, DType::f32, "needs f32 [8]"}};
  for (const Bad& b : bads) {
    CAPTURE(b.expect);
    GpwWriter w("gpen", nlohmann::json::object());
    std::vector<uint8_t> codes(static_cast<size_t>(b.w.numel()), 1);
    std::vector<float> sc(static_cast<size_t>(b.s.numel()), 1.0f);
    w.add_copy("a.weight", DType::i8, b.w, codes.data());
    w.add_copy("a.weight.qscale", b.sdt, b.s, sc.data());
    w.write(p.string());
    try {
      (void)GpwFile::open(p.string());
      FAIL("opened");
    } catch (const Error& e) {
      const std::string m = e.what();
      CHECK(m.find(p.string()) != std::string::npos);
      CHECK(m.find("scale tensor 'a.weight.qscale'") != std::string::npos);
      CHECK(m.find(b.expect) != std::string::npos);
    }
  }
  fs::remove(p);
}
