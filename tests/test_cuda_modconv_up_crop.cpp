// The row crop of the transposed modconv (ModConvParams::up with crop_top / crop_bottom: each
// phase's input row offset `ay` and first weight row in the geometry, modconv.cu) on every CUDA
// modconv kernel: a call that reads input rows [i0, i1) and crops its own output to rows [o0, o1)
// of the whole op's produces exactly those rows, bit for bit. The whole op and the bands run on
// the same kernel with the same depth split (split_rows = the whole op's rows), so each output
// sums the same products in the same order: SIMT (f32), mma.sync and WMMA (f16; vector and
// element staging), split-K, and 8-bit weights (WMMA's dequantising B stage). bf16 takes the
// f16 kernels.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/ops_gemm.h"
#include "kernels/cuda/ops_gpen.h"
#include "tests/cuda_emu/test_util.h"
#include "weights/quant8.h"

using namespace gpen;
using cuda_test::DeviceBuffer;
using cuda_test::make_pair;

namespace {

struct Case {
  const char* name;
  int n, h, w, c1, c2, cout, k;
  bool w8 = false;  // int8 weight codes
};

TensorView rows_of(const TensorView& full, int64_t r0, int64_t rows) {
  TensorView v = full;
  v.shape.d[1] = rows;
  v.data = static_cast<char*>(full.data) + r0 * full.stride(1) * static_cast<int64_t>(dtype_size(full.dtype));
  return v;
}

int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int ceil_div(int a, int b) { return -floor_div(-a, b); }

void run_case(const Case& c, DType dt) {
  CAPTURE(std::string(c.name));
  CAPTURE(std::string(dtype_name(dt)));
  const int C = c.c1 + c.c2, hf = 2 * (c.h - 1) + c.k, wf = 2 * (c.w - 1) + c.k;
  const float wscale = 1.0f / std::sqrt(static_cast<float>(c.k * c.k * C));
  auto x = make_pair(Shape{c.n, c.h, c.w, c.c1}, dt, 41);
  auto x2 = make_pair(Shape{c.n, c.h, c.w, std::max(c.c2, 1)}, dt, 42, -2.0f, 2.0f);
  auto x2_scale = make_pair(Shape{1}, dt, 43, 0.5f, 1.0f);
  auto x2_bias = make_pair(Shape{std::max(c.c2, 1)}, dt, 44, -0.5f, 0.5f);
  auto w = make_pair(Shape{c.k, c.k, C, c.cout}, dt, 45, -wscale, wscale);
  auto s = make_pair(Shape{c.n, C}, dt, 46, -1.5f, 1.5f);
  DeviceBuffer codes, scales;
  TensorView w8v;
  if (c.w8) {
    const int64_t nw = w.shape.numel();
    const Quantized8 qz = quantize8(w.host.data(), nw, c.cout, DType::i8);
    codes = DeviceBuffer(static_cast<size_t>(nw));
    codes.upload(qz.codes);
    scales = DeviceBuffer(static_cast<size_t>(c.cout) * 4);
    scales.upload(qz.scale);
    w8v = make_view(codes.get(), DType::i8, w.shape);
    w8v.qscale = scales.as<const float>();
  }
  ModConvParams p;
  p.k = c.k, p.up = true;
  p.has_x2 = c.c2 > 0, p.x2_act = Activation::scaled_leaky();
  p.split_rows = hf;  // bands split their depth as the whole op does (as the banding transform sets)

  auto call = [&](int i0, int i1, int o0, int o1) {
    ModConvParams q = p;
    q.crop_top = o0 - 2 * i0, q.crop_bottom = 2 * (i1 - 1) + c.k - o1;
    REQUIRE(q.crop_top >= 0);
    REQUIRE(q.crop_bottom >= 0);
    const TensorView xv = rows_of(x.dv, i0, i1 - i0), x2v = rows_of(x2.dv, i0, i1 - i0);
    const Shape band_y{c.n, o1 - o0, wf, c.cout};
    auto y = make_pair(band_y, dt, 47, 1e3f, 1e3f);
    cuda::ModConvArgs a;
    a.x = &xv, a.w = c.w8 ? &w8v : &w.dv, a.s = &s.dv;
    if (c.c2) a.x2 = &x2v, a.x2_scale = &x2_scale.dv, a.x2_bias = &x2_bias.dv;
    const Shape xcat{c.n, i1 - i0, c.w, C};
    const size_t wsb = cuda::modconv_workspace_bytes(q, xcat, band_y);
    DeviceBuffer ws(wsb);
    cuda::modconv(q, a, y.dv, wsb ? ws.get() : nullptr, nullptr);
    return y.fetch();
  };
  const std::vector<float> full = call(0, c.h, 0, hf);
  const size_t row = static_cast<size_t>(wf) * c.cout;
  // Every one-row band (both parities of crop_top) and 3-row bands from row 1 (an odd crop at
  // the top, even ones inside) from the fewest input rows, and two random bands with an extra
  // input row above and below where there is one.
  std::vector<std::pair<int, int>> bands;
  for (int o0 = 0; o0 < hf; ++o0) bands.push_back({o0, o0 + 1});
  for (int o0 = 1; o0 < hf; o0 += 3) bands.push_back({o0, std::min(hf, o0 + 3)});
  std::mt19937 rng(static_cast<uint32_t>(c.h * 131 + c.k));
  for (int b = 0; b < 2; ++b) {
    const int o0 = std::uniform_int_distribution<int>(0, hf - 1)(rng);
    bands.push_back({o0, std::uniform_int_distribution<int>(o0 + 1, hf)(rng)});
  }
  int extra = 0;
  for (size_t bi = 0; bi < bands.size(); ++bi) {
    const int o0 = bands[bi].first, o1 = bands[bi].second;
    int i0 = std::max(0, std::min(ceil_div(o0 - (c.k - 1), 2), floor_div(o0, 2)));
    int i1 = std::min(c.h, std::max(floor_div(o1 - 1, 2), ceil_div(o1 - c.k, 2)) + 1);
    if (bi + 2 >= bands.size()) i0 = std::max(0, i0 - 1), i1 = std::min(c.h, i1 + 1), ++extra;  // the random ones
    const std::vector<float> band = call(i0, i1, o0, o1);
    const size_t len = row * static_cast<size_t>(o1 - o0);
    size_t bad = 0;
    for (int n = 0; n < c.n; ++n)
      for (size_t e = 0; e < len; ++e) bad += !(band[n * len + e] == full[(static_cast<size_t>(n) * hf + o0) * row + e]);
    INFO("input rows [" << i0 << ", " << i1 << "), output rows [" << o0 << ", " << o1 << "): " << bad
                        << " differing outputs");
    CHECK(bad == 0);
  }
  CHECK(extra == 2);
}

const Case kCases[] = {
    // GPEN's up conv on the vector path (channels multiples of 8): mma / WMMA / SIMT vector.
    {"3x3 up x2 (vector)", 2, 4, 3, 8, 8, 24, 3},
    // Odd channels: element staging.
    {"3x3 up odd channels (element)", 1, 4, 3, 5, 3, 11, 3},
    // Deep, few tiles: the depth splits (split-K), decided for the whole op's rows.
    {"3x3 up split-K", 1, 3, 2, 32, 32, 24, 3},
    // k = 1 (a tapless phase: zeros) and k = 5.
    {"1x1 up", 1, 4, 3, 8, 0, 8, 1},
    {"5x5 up", 1, 4, 3, 8, 0, 8, 5},
    // int8 weight codes: the dequantising B stage.
    {"3x3 up int8 weights", 1, 4, 3, 8, 8, 16, 3, true},
};

}  // namespace

TEST_CASE("cuda cropped transposed modconv rows equal the whole op's rows bit for bit (f32 and f16 on mma and WMMA)") {
  for (const Case& c : kCases) run_case(c, DType::f32);
  for (cuda::GemmFamily f : {cuda::GemmFamily::mma, cuda::GemmFamily::wmma}) {
    cuda::set_gemm_family(f);
    CAPTURE(std::string(cuda::gemm_family_name(f)));
    for (const Case& c : kCases) run_case(c, DType::f16);
  }
  cuda::set_gemm_family(cuda::GemmFamily::mma);
}

TEST_CASE("cuda cropped transposed modconv rejects bad crops") {
  const DType dt = DType::f32;
  auto x = make_pair(Shape{1, 4, 4, 8}, dt, 1);
  auto w = make_pair(Shape{3, 3, 8, 8}, dt, 2);
  auto s = make_pair(Shape{1, 8}, dt, 3);
  cuda::ModConvArgs a;
  a.x = &x.dv, a.w = &w.dv, a.s = &s.dv;
  ModConvParams p;
  p.up = true, p.crop_top = 1, p.crop_bottom = 2;
  auto y6 = make_pair(Shape{1, 6, 9, 8}, dt, 4);
  cuda::modconv(p, a, y6.dv, nullptr, nullptr);  // well-formed: 9 - 3 rows
  auto y9 = make_pair(Shape{1, 9, 9, 8}, dt, 5);
  CHECK_THROWS_AS(cuda::modconv(p, a, y9.dv, nullptr, nullptr), Error);
  p.crop_top = -1;
  auto y7 = make_pair(Shape{1, 7, 9, 8}, dt, 6);
  CHECK_THROWS_AS(cuda::modconv(p, a, y7.dv, nullptr, nullptr), Error);
  ModConvParams same;  // the same-padded conv crops with pad_top / pad_bottom
  same.crop_bottom = 1;
  auto y3 = make_pair(Shape{1, 3, 4, 8}, dt, 7);
  CHECK_THROWS_AS(cuda::modconv(same, a, y3.dv, nullptr, nullptr), Error);
}
