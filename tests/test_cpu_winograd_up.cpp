// The polyphase Winograd transposed modconv (kernels/cpu/winograd_up.h), m = 2 and m = 4,
// against a float64 reference of the 3x3 stride-2 transposed conv (y[2a + ky, 2b + kx] +=
// x[a, b] s W[ky, kx], 2H + 1 x 2W + 1, no epilogue) and against the direct path (cpu::modconv
// under the options of GPEN_CPU_CONV=direct), on shapes that stress the tiling: odd
// sizes (the tile grid covers H + 1 positions, so the last tiles are mostly outside), channel
// counts off the vector width, K blocks, output-channel chunks with tails, several
// transformed-weight groups, batch > 1 and a broadcast x, the noise concat, a strided input and
// output; then the 8-bit weights. The ctest registration runs it on the AVX2 and the AVX-512 path.
//
// Tolerances, from fp32 rounding. The direct path's error is a few ulps of the sum of |products|
// ("mass": 1e-6 * mass + 1e-6, as test_cpu_modconv.cpp). Winograd adds the rounding of the
// transforms: B^T's rows sum to at most 6 in magnitude for m = 4 (2 for m = 2), A^T's to 11 (2),
// G's to 1; each rounding is relative 6e-8 of a term of that mass, so a point's error is a few
// dozen ulps of the mass for m = 4 and a few for m = 2: we allow 1e-5 * mass + 1e-5 (m = 4) and
// 2e-6 * mass + 2e-6 (m = 2), the stride-1 Winograd's bounds (test_cpu_winograd.cpp); the
// MESSAGE lines print the measured fraction. A wrong tap, phase, tile or channel moves outputs by
// O(mass / sqrt(K)), orders above.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/winograd_up.h"
#include "weights/quant8.h"

using namespace gpen;
namespace wd = cpu::winograd_detail;

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
  float at(int64_t n, int64_t y, int64_t x, int64_t c) const {
    return view.f32()[n * view.stride(0) + y * view.stride(1) + x * view.stride(2) + c * view.stride(3)];
  }
};

struct Case {
  int64_t N, XN, H, W, C1, C2, Co;
  bool strided;
};

struct Data {
  Case k;
  Strided x, x2;
  std::vector<float> w, s, b2, sc{0.7f};
  TensorView wv, sv, b2v, scv;
  ModConvParams p;
  Data(const Case& c, std::mt19937& rng)
      : k(c),
        x(Shape{c.XN, c.H, c.W, c.C1}, c.C1 + (c.strided ? 3 : 0), c.strided ? 3 : 0),
        x2(Shape{c.N, c.H, c.W, std::max<int64_t>(c.C2, 1)}, std::max<int64_t>(c.C2, 1), 0) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const int64_t C = c.C1 + c.C2;
    for (auto& v : x.mem) v = nd(rng);
    for (auto& v : x2.mem) v = nd(rng);
    w.resize(static_cast<size_t>(9 * C * c.Co)), s.resize(static_cast<size_t>(c.N * C));
    b2.resize(static_cast<size_t>(std::max<int64_t>(c.C2, 1)));
    for (auto& v : w) v = nd(rng) / std::sqrt(float(9 * C));
    for (auto& v : s) v = 1.0f + 0.3f * nd(rng);
    for (auto& v : b2) v = 0.2f * nd(rng);
    wv = make_view(w.data(), DType::f32, Shape{3, 3, C, c.Co}), sv = make_view(s.data(), DType::f32, Shape{c.N, C});
    b2v = make_view(b2.data(), DType::f32, Shape{std::max<int64_t>(c.C2, 1)});
    scv = make_view(sc.data(), DType::f32, Shape{1});
    p.up = true;
    p.has_x2 = c.C2 > 0;
    p.x2_act = Activation::scaled_leaky();
  }
  cpu::ModConvArgs args(const TensorView* w8 = nullptr) const {
    cpu::ModConvArgs a;
    a.x = &x.view, a.w = w8 ? w8 : &wv, a.s = &sv;
    if (k.C2 > 0) a.x2 = &x2.view, a.x2_scale = &scv, a.x2_bias = &b2v;
    return a;
  }
  Shape xcat() const { return Shape{k.XN, k.H, k.W, k.C1 + k.C2}; }
  Shape yshape() const { return Shape{k.N, 2 * k.H + 1, 2 * k.W + 1, k.Co}; }
  // F(m, 2) in the form `o` gives this shape (fused where it may).
  cpu::ConvChoice form(int m, const cpu::CpuOptions& o = {}) const {
    return cpu::winograd_up_form(m, k.N, k.H, k.W, k.C1 + k.C2, k.Co, o);
  }
};

// The direct paths (GPEN_CPU_CONV=direct).
cpu::CpuOptions direct() {
  cpu::CpuOptions o;
  o.conv = cpu::ConvMode::direct;
  return o;
}

// The transposed Winograd tile the conv rule picks under `o` (kernels/cpu/conv_select.h; 0: another
// path). H, W, C: the input (C with the concat), Co the output channels.
int winograd_up_tile(const ModConvParams& p, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Co,
                     const cpu::CpuOptions& o = {}) {
  const Shape y{N, p.up ? 2 * H + 1 : H, p.up ? 2 * W + 1 : W, Co};
  const cpu::ConvChoice c = cpu::choose_conv(cpu::modconv_case(p, Shape{N, H, W, C}, y), o);
  return c.path == cpu::ConvPath::winograd_up || c.path == cpu::ConvPath::winograd_up_fused ? c.tile : 0;
}

// The float64 reference and the mass of every output.
void reference(const Data& d, std::vector<double>& ref, std::vector<double>& mass) {
  const Case& k = d.k;
  const int64_t C = k.C1 + k.C2, Ho = 2 * k.H + 1, Wo = 2 * k.W + 1;
  ref.assign(static_cast<size_t>(k.N * Ho * Wo * k.Co), 0.0);
  mass.assign(ref.size(), 0.0);
  std::vector<double> xi(static_cast<size_t>(C));
  for (int64_t n = 0; n < k.N; ++n)
    for (int64_t a = 0; a < k.H; ++a)
      for (int64_t b = 0; b < k.W; ++b) {
        for (int64_t c = 0; c < C; ++c) {
          double v;
          if (c < k.C1) {
            v = d.x.at(k.XN == 1 ? 0 : n, a, b, c);
          } else {
            const double t = double(d.x2.at(n, a, b, c - k.C1)) * d.sc[0] + d.b2[c - k.C1];
            v = t * (t < 0 ? d.p.x2_act.slope : 1.0) * d.p.x2_act.gain;
          }
          xi[c] = v * d.s[n * C + c];
        }
        for (int ky = 0; ky < 3; ++ky)
          for (int kx = 0; kx < 3; ++kx) {
            const size_t o0 = static_cast<size_t>(((n * Ho + 2 * a + ky) * Wo + 2 * b + kx) * k.Co);
            for (int64_t c = 0; c < C; ++c) {
              const float* wp = d.w.data() + ((ky * 3 + kx) * C + c) * k.Co;
              for (int64_t o = 0; o < k.Co; ++o) {
                const double t = xi[c] * wp[o];
                ref[o0 + o] += t, mass[o0 + o] += std::abs(t);
              }
            }
          }
      }
}

// m = 0: the direct path (cpu::modconv under GPEN_CPU_CONV=direct); else F(m, 2) in the form `o` allows.
std::vector<float> run(const Data& d, int m, const TensorView* w8 = nullptr, bool strided_y = false,
                       const cpu::CpuOptions& o = {}) {
  const Shape ys = d.yshape();
  Strided y(ys, ys[3] + (strided_y ? 5 : 0), strided_y ? 2 : 0);
  for (auto& v : y.mem) v = -7.0f;  // every output must be written
  const cpu::ModConvArgs a = d.args(w8);
  const int nt = cpu::num_threads();
  std::vector<unsigned char> ws;
  if (m) {
    ws.assign(wd::modconv_winograd_up_workspace_bytes(d.form(m, o), d.xcat(), ys, nt), 0xAB);
    wd::modconv_winograd_up(d.form(m, o), d.p, a, y.view, ws.data());
  } else {
    ws.assign(cpu::modconv_workspace_bytes(d.p, d.xcat(), ys, nt, direct()) + 1, 0xAB);
    cpu::modconv(d.p, a, y.view, ws.data(), direct());
  }
  std::vector<float> out(static_cast<size_t>(ys.numel()));
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t oy = 0; oy < ys[1]; ++oy)
      for (int64_t ox = 0; ox < ys[2]; ++ox)
        for (int64_t o = 0; o < ys[3]; ++o) out[static_cast<size_t>(((n * ys[1] + oy) * ys[2] + ox) * ys[3] + o)] = y.at(n, oy, ox, o);
  return out;
}

double worst(const std::vector<float>& got, const std::vector<double>& ref, const std::vector<double>& mass, double rel) {
  double w = 0;
  for (size_t i = 0; i < got.size(); ++i) w = std::max(w, std::abs(got[i] - ref[i]) / (rel * mass[i] + rel));
  return w;
}

}  // namespace

TEST_CASE("winograd up: the transposed modconv matches the float64 reference and the direct path") {
  std::mt19937 rng(23);
  const Case cases[] = {
      {2, 2, 9, 11, 40, 40, 40, false},   // odd sizes, noise concat, Co tail, batch 2
      {1, 1, 6, 5, 150, 0, 70, false},    // K blocks (C > 128), Co chunks with a tail
      {3, 1, 5, 4, 24, 8, 33, false},     // broadcast x, concat inside a vector
      {1, 1, 1, 2, 5, 0, 3, false},       // one input row: tiles mostly outside
      {2, 2, 7, 6, 20, 12, 19, true},     // strided x and y
      {1, 1, 21, 19, 16, 0, 16, false},   // many tile blocks
      {1, 1, 4, 3, 512, 0, 256, false},   // the transformed weight in several groups
      // m = 4 on these runs the fused form (winograd_up_fused.cpp: sizes multiples of 4, at most
      // kFusedMaxTiles tiles per run), its rim GEMMs and its image chunks:
      {1, 1, 16, 16, 200, 60, 70, false},  // K blocks with a tail, the concat in the last, Co tail
      {2, 2, 8, 12, 40, 24, 35, false},    // two images in one run, H != W
      {3, 1, 4, 4, 24, 8, 33, false},      // broadcast x, one tile per image
      {2, 2, 8, 4, 20, 12, 19, true},      // strided x and y
      {2, 2, 32, 32, 48, 0, 64, false},    // 64 tiles per image: one image per run, two runs
      // From kUpFusedSplitMinTiles tiles the threads split the points, not the chunks:
      {1, 1, 24, 24, 200, 60, 70, false},  // 36 tiles, K blocks with a tail, the concat, Co tail
  };
  int i = 0;
  for (const Case& k : cases) {
    const Data d(k, rng);
    std::vector<double> ref, mass;
    reference(d, ref, mass);
    const bool fusable = wd::make_wino_up_fused_plan(1, k.H, k.W, k.C1 + k.C2, k.Co).fused;
    for (int m : {2, 4, 0})
      for (int threads : {1, 2, 3, 5})
        for (bool fused : {true, false}) {
          if (!fused && (m != 4 || !fusable)) continue;  // the grouped m = 4 on a fusable shape too
          // 3 threads: a three-way point split; 5: past kUpFusedSplitMax, the chunk split.
          if (threads > 2 && !(m == 4 && fused && fusable)) continue;
          cpu::CpuOptions o;
          o.wino_fused = fused;
          cpu::set_num_threads(threads);
          const double rel = m == 4 ? 1e-5 : m == 2 ? 2e-6 : 1e-6;
          const double e = worst(run(d, m, nullptr, k.strided, o), ref, mass, rel);
          MESSAGE("case " << i << (m ? " winograd up m " + std::to_string(m) : std::string(" direct"))
                          << std::string(m == 4 && fusable ? (fused ? " fused" : " grouped") : "") << " threads " << threads
                          << ": " << e << " of its tolerance");
          CHECK(e <= 1.0);
        }
    ++i;
  }
  if (!wd::make_wino_up_fused_plan(2, 16, 16, 200 + 60, 70).fused) FAIL("the fused cases no longer fuse");
  if (wd::make_wino_up_fused_plan(1, 24, 24, 200 + 60, 70).ntiles < wd::kUpFusedSplitMinTiles ||
      wd::kUpFusedSplitMax < 3 || wd::kUpFusedSplitMax >= 5)
    FAIL("the point-split cases no longer cover both splits");
  if (wd::make_wino_up_plan(4, 1, 4, 3, 512, 256, 2).ngroup < 2) FAIL("the group case no longer makes groups");
  cpu::set_num_threads(0);
}

TEST_CASE("winograd up: 8-bit weights equal the f32 weights they dequantise to, bit for bit") {
  // The weight transform dequantises each code with the direct path's one multiply
  // (kernels/cpu/weights8.h), so the transformed weights, and everything after, are identical.
  std::mt19937 rng(7);
  // 7x9: the grouped forms; 8x8: m = 4 in the fused form (its weight slices dequantise the same way).
  for (const Case& k : {Case{2, 2, 7, 9, 40, 24, 35, false}, Case{2, 2, 8, 8, 40, 24, 35, false}}) {
    Data d(k, rng);
    const int64_t C = k.C1 + k.C2;
    for (DType dt : {DType::i8, DType::f8e4m3}) {
      CAPTURE(dtype_name(dt));
      const Quantized8 q = quantize8(d.w.data(), 9 * C * k.Co, k.Co, dt);
      std::vector<float> deq = dequantize8(q.codes.data(), q.scale.data(), 9 * C * k.Co, k.Co, dt);
      TensorView w8 = make_view(const_cast<uint8_t*>(q.codes.data()), dt, Shape{3, 3, C, k.Co});
      w8.qscale = q.scale.data();
      for (int m : {2, 4}) {
        const std::vector<float> got8 = run(d, m, &w8);
        d.w = deq;  // the same data, f32
        d.wv = make_view(d.w.data(), DType::f32, Shape{3, 3, C, k.Co});
        const std::vector<float> got32 = run(d, m);
        CHECK(std::memcmp(got8.data(), got32.data(), got8.size() * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("winograd up: per-group 8-bit scales equal the f32 weights they dequantise to, bit for bit") {
  // Grouped scales ([G, O], one per output channel per group of reduction rows (tap, c)): the
  // transform must pick each row's group, as the direct path and the stride-1 Winograd do.
  std::mt19937 rng(11);
  const Case k{2, 2, 7, 9, 40, 24, 35, false};
  Data d(k, rng);
  const int64_t C = k.C1 + k.C2;
  const Shape ws{3, 3, C, k.Co};
  for (DType dt : {DType::i8, DType::f8e4m3})
    for (int64_t group : {32, 64}) {
      CAPTURE(dtype_name(dt));
      CAPTURE(group);
      const Quantized8Grouped q = quantize8_grouped(d.w.data(), ws, dt, group);
      REQUIRE(q.group > 0);
      const std::vector<float> deq = dequantize8_grouped(q.codes.data(), q.scale.data(), ws, dt, q.group);
      TensorView w8 = make_view(const_cast<uint8_t*>(q.codes.data()), dt, ws);
      w8.qscale = q.scale.data();
      w8.qgroup = q.group;
      Data f = d;
      f.w = deq;
      f.wv = make_view(f.w.data(), DType::f32, ws);
      for (int m : {2, 4}) {
        const std::vector<float> got8 = run(d, m, &w8);
        const std::vector<float> got32 = run(f, m);
        CHECK(std::memcmp(got8.data(), got32.data(), got8.size() * sizeof(float)) == 0);
      }
    }
}

TEST_CASE("winograd up plan: groups bound the transformed weight, the scratch does not grow with the image") {
  // GPEN-512's 64 -> 129 layer (1024 -> 256): the transformed weight (9x the weight for m = 4)
  // is made in groups no larger than the direct path's packed weight or kUFloorFloats.
  for (const auto& [C, Co] : {std::pair<int64_t, int64_t>{1024, 256}, {1024, 512}, {256, 64}}) {
    const wd::WinoPlan pl = wd::make_wino_up_plan(4, 1, 64, 64, C, Co, 2);
    CHECK(pl.u_floats <= std::max(9 * C * Co, wd::kUFloorFloats));
    CHECK(pl.ngroup * pl.group_co >= Co);
    CHECK(pl.per_thread * 4 < (2 << 20));  // under 2 MB per thread
  }
  const wd::WinoPlan a = wd::make_wino_up_plan(4, 1, 256, 256, 256, 64, 2);
  const wd::WinoPlan b = wd::make_wino_up_plan(4, 1, 1024, 1024, 256, 64, 2);
  CHECK(a.per_thread == b.per_thread);
  CHECK(a.u_floats == b.u_floats);
  CHECK(a.T % 6 == 0);
  CHECK(a.T <= wd::kUpMaxTileBlock);
  // The tile block's scratch fits the L2 budget (fit_tile_block), or is the smallest block.
  CHECK(a.T >= 12);
  CHECK((a.T == 12 || a.T * a.nxi * (a.kcs + a.cc) * 4 <= wd::tile_scratch_budget_bytes()));
  CHECK_THROWS_AS(wd::make_wino_up_plan(3, 1, 8, 8, 8, 8, 1), Error);
  // The choice: never for a stride-1 conv, a banded op, or under GPEN_CPU_CONV=direct.
  ModConvParams up;
  up.up = true;
  CHECK(winograd_up_tile(up, 1, 64, 64, 256, 256, direct()) == 0);
  ModConvParams banded = up;
  banded.split_rows = 8;
  CHECK(winograd_up_tile(banded, 1, 64, 64, 256, 256) == 0);
}

TEST_CASE("winograd up: auto runs m = 4 on the large up convs with few channels (grouped) and on the 16x16 and 32x32 ones (fused), direct elsewhere") {
  ModConvParams up;
  up.up = true;
  CHECK(winograd_up_tile(up, 1, 256, 256, 256, 64) == 4);  // GPEN-512's last (convs.12.convT)
  CHECK(winograd_up_tile(up, 1, 128, 128, 64, 32) == 4);   // GPEN-256's last
  CHECK(winograd_up_tile(up, 1, 128, 128, 512, 128) == 0);  // GPEN-512's convs.10: the weight is too big
  CHECK(winograd_up_tile(up, 1, 64, 64, 128, 64) == 4);     // GPEN-256's convs.8.convT
  CHECK(winograd_up_tile(up, 1, 32, 32, 512, 128) == 4);    // GPEN-256's convs.6.convT: the fused form
  CHECK(winograd_up_tile(up, 1, 16, 16, 512, 256) == 4);    // GPEN-256's convs.4.convT: the fused form
  CHECK(winograd_up_tile(up, 1, 8, 8, 512, 256) == 0);      // GPEN-256's convs.2.convT: 4 tiles
  CHECK(winograd_up_tile(up, 1, 32, 32, 1024, 512) == 4);   // GPEN-512's convs.6.convT: the fused form
  CHECK(winograd_up_tile(up, 1, 32, 32, 128, 128) == 0);    // too few channels
  CHECK(winograd_up_tile(up, 1, 30, 30, 512, 128) == 0);    // not a multiple of 4: no exact tiles
  CHECK(winograd_up_tile(up, 1, 64, 64, 512, 256) == 0);    // 64x64 with 512 channels: the weight is too big
  ModConvParams plain;  // stride 1: winograd.h's business
  CHECK(winograd_up_tile(plain, 1, 256, 256, 256, 64) == 0);
  up.split_rows = 16;  // banded: direct, bit for bit
  CHECK(winograd_up_tile(up, 1, 256, 256, 256, 64) == 0);
}

TEST_CASE("winograd up: streaming stores for large outputs give the bits of plain stores") {
  // kUpStreamMinBytes decides which outputs go out by streaming stores; the values are the same
  // either way. Both forms (grouped m = 2 / m = 4, fused with its rim, the point split) on an
  // output aligned to 64 bytes (whole vectors stream) and on a channel-offset one (the rows
  // misaligned, so the stores fall back), each with every threshold extreme.
  std::mt19937 rng(31);
  const Case cases[] = {
      {2, 2, 9, 11, 40, 40, 48, false},    // grouped, batch 2, noise concat
      {1, 1, 21, 19, 16, 0, 32, false},    // grouped, many tile blocks
      {2, 2, 8, 12, 40, 24, 64, false},    // fused, two images
      {1, 1, 24, 24, 200, 60, 80, false},  // fused, the point split, K blocks with a tail
  };
  for (const Case& k : cases) {
    const Data d(k, rng);
    const Shape ys = d.yshape();
    for (int64_t c0 : {0, 3}) {  // 3: rows 12 bytes off the vector
      Shape parent = ys;
      parent[3] = ys[3] + c0;
      std::vector<float> mem(static_cast<size_t>(parent.numel() + 16));
      float* base = mem.data();
      while (reinterpret_cast<uintptr_t>(base) % 64) ++base;
      TensorView y = make_view(base + c0, DType::f32, ys);
      y.strides = dense_strides(parent);
      for (int m : {2, 4})
        for (int threads : {1, 2}) {
          cpu::set_num_threads(threads);
          std::vector<unsigned char> ws(wd::modconv_winograd_up_workspace_bytes(d.form(m), d.xcat(), ys, threads), 0xAB);
          std::vector<float> plain, streamed;
          for (int64_t min_bytes : {int64_t{1} << 62, int64_t{1}}) {
            wd::set_up_stream_min_bytes(min_bytes);
            std::fill(mem.begin(), mem.end(), -7.0f);
            wd::modconv_winograd_up(d.form(m), d.p, d.args(), y, ws.data());
            (min_bytes == 1 ? streamed : plain) = mem;
          }
          CAPTURE(k.H);
          CAPTURE(c0);
          CAPTURE(m);
          CAPTURE(threads);
          CHECK(std::memcmp(plain.data(), streamed.data(), plain.size() * sizeof(float)) == 0);
          CHECK(plain[static_cast<size_t>(base - mem.data() + c0)] != -7.0f);
        }
    }
  }
  wd::set_up_stream_min_bytes(0);
  CHECK(wd::up_stream_min_bytes() == wd::kUpStreamMinBytes);
  cpu::set_num_threads(0);
}
