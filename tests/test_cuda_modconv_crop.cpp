// The row crop of the same-padded modconv (ModConvParams::pad_top / pad_bottom, the geometry's dy0
// on CUDA) on every CUDA modconv kernel: a band that reads input rows [i0, i1) and pads only
// outside the image produces exactly the whole op's rows it covers, bit for bit. The whole op and
// the bands run on the same kernel with the same depth split (split_rows), so each output sums the
// same products in the same order: SIMT (f32), mma.sync and WMMA (f16, bf16; vector and element
// staging; f16), split-K, and 8-bit weights (WMMA's dequantising B stage).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
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
using cuda_test::TensorPair;

namespace {

struct Case {
  const char* name;
  int n, h, w, c1, c2, cout, k;
  bool demod, bias, residual, act;
  bool w8 = false;  // int8 weight codes
};

// Rows [r0, r0 + rows) of a contiguous NHWC device tensor.
TensorView rows_of(const TensorView& full, int64_t r0, int64_t rows) {
  TensorView v = full;
  v.shape.d[1] = rows;
  v.data = static_cast<char*>(full.data) + r0 * full.stride(1) * static_cast<int64_t>(dtype_size(full.dtype));
  return v;
}

void run_case(const Case& c, DType dt) {
  CAPTURE(std::string(c.name));
  CAPTURE(std::string(dtype_name(dt)));
  const int C = c.c1 + c.c2;
  const Shape ys{c.n, c.h, c.w, c.cout};
  const float wscale = 1.0f / std::sqrt(static_cast<float>(c.k * c.k * C));
  auto x = make_pair(Shape{c.n, c.h, c.w, c.c1}, dt, 31);
  auto x2 = make_pair(Shape{c.n, c.h, c.w, std::max(c.c2, 1)}, dt, 32, -2.0f, 2.0f);
  auto x2_scale = make_pair(Shape{1}, dt, 33, 0.5f, 1.0f);
  auto x2_bias = make_pair(Shape{std::max(c.c2, 1)}, dt, 34, -0.5f, 0.5f);
  auto w = make_pair(Shape{c.k, c.k, C, c.cout}, dt, 35, -wscale, wscale);
  auto s = make_pair(Shape{c.n, C}, dt, 36, -1.5f, 1.5f);
  auto d = make_pair(Shape{c.n, c.cout}, dt, 37, 0.5f, 2.0f);
  auto b = make_pair(Shape{c.cout}, dt, 38, -0.5f, 0.5f);
  auto r = make_pair(ys, dt, 39);
  // int8 codes and per-output-channel scales of the weight.
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
  p.k = c.k;
  p.has_x2 = c.c2 > 0, p.x2_act = Activation::scaled_leaky();
  p.has_demod = c.demod, p.has_bias = c.bias, p.has_residual = c.residual;
  if (c.act) p.act = Activation::scaled_leaky();
  p.split_rows = c.h;  // bands split their depth as the whole op does (as the banding transform sets)

  auto call = [&](int o0, int o1) {
    const int half = c.k / 2, lo = o0 - half, hi = o1 + half;
    const int i0 = std::max(0, lo), i1 = std::min(c.h, hi);
    ModConvParams q = p;
    q.pad_top = i0 - lo, q.pad_bottom = hi - i1;
    const TensorView xv = rows_of(x.dv, i0, i1 - i0), x2v = rows_of(x2.dv, i0, i1 - i0);
    const TensorView rv = rows_of(r.dv, o0, o1 - o0);
    const Shape band_y{c.n, o1 - o0, c.w, c.cout};
    auto y = make_pair(band_y, dt, 40, 1e3f, 1e3f);
    cuda::ModConvArgs a;
    a.x = &xv, a.w = c.w8 ? &w8v : &w.dv, a.s = &s.dv;
    if (c.c2) a.x2 = &x2v, a.x2_scale = &x2_scale.dv, a.x2_bias = &x2_bias.dv;
    if (c.demod) a.d = &d.dv;
    if (c.bias) a.bias = &b.dv;
    if (c.residual) a.residual = &rv;
    const Shape xcat{c.n, i1 - i0, c.w, C};
    const size_t wsb = cuda::modconv_workspace_bytes(q, xcat, band_y);
    DeviceBuffer ws(wsb);
    cuda::modconv(q, a, y.dv, wsb ? ws.get() : nullptr, nullptr);
    return y.fetch();
  };
  const std::vector<float> full = call(0, c.h);
  const size_t row = static_cast<size_t>(c.w) * c.cout;
  int checked = 0;
  // Bands of 1, 2 and 3 rows tiling the image (top, interior and bottom edges, partial pads for
  // k = 5), and one of all rows but the first and last.
  std::vector<std::pair<int, int>> bands{{1, c.h - 2}};
  for (int h = 1; h <= 3; ++h)
    for (int o0 = 0; o0 + h <= c.h; o0 += h) bands.push_back({o0, h});
  for (const auto& bh : bands) {
    const int o0 = bh.first, h = bh.second;
    const std::vector<float> band = call(o0, o0 + h);
    size_t bad = 0;
    for (int n = 0; n < c.n; ++n)
      for (size_t e = 0; e < row * h; ++e) {
        const float got = band[n * row * h + e], want = full[(static_cast<size_t>(n) * c.h + o0) * row + e];
        // Bit for bit (the decoded values are exact; NaN would differ).
        if (!(got == want)) ++bad;
      }
    INFO("band at row " << o0 << ", " << h << " rows: " << bad << " differing outputs");
    CHECK(bad == 0);
    ++checked;
  }
  CHECK(checked > 3);
}

const Case kCases[] = {
    // StyledConv shape on the vector path (channels multiples of 8): mma / WMMA / SIMT vector.
    {"3x3 x2 + demod + bias + act (vector)", 2, 7, 5, 8, 8, 24, 3, true, true, false, true},
    // Odd channels: element staging, residual.
    {"3x3 odd channels + residual (element)", 1, 6, 4, 5, 3, 11, 3, false, true, true, true},
    // Two pixel tiles per band (W 20 x rows > 128 pixels) and a tail.
    {"3x3 several tiles", 1, 7, 20, 8, 0, 16, 3, true, false, false, false},
    // Deep, few tiles: the depth splits (split-K), decided for the whole op's rows.
    {"3x3 split-K", 1, 5, 4, 32, 32, 24, 3, true, true, true, true},
    // k = 5: two halo rows, partial pads at the image edges.
    {"5x5", 1, 7, 5, 8, 0, 8, 5, true, true, false, false},
    // int8 weight codes: the dequantising B stage.
    {"3x3 int8 weights", 1, 6, 5, 8, 8, 16, 3, true, true, false, true, true},
};

}  // namespace

// bf16 takes the same kernels as f16 (only the element type differs): f16 covers the crop.
TEST_CASE("cuda cropped modconv rows equal the whole op's rows bit for bit (f32 and f16 on mma and WMMA)") {
  for (const Case& c : kCases) run_case(c, DType::f32);
  for (cuda::GemmFamily f : {cuda::GemmFamily::mma, cuda::GemmFamily::wmma}) {
    cuda::set_gemm_family(f);
    CAPTURE(std::string(cuda::gemm_family_name(f)));
    for (const Case& c : kCases) run_case(c, DType::f16);
  }
  cuda::set_gemm_family(cuda::GemmFamily::mma);
}

TEST_CASE("cuda cropped modconv rejects bad row padding") {
  const DType dt = DType::f32;
  auto x = make_pair(Shape{1, 4, 4, 8}, dt, 1);
  auto w = make_pair(Shape{3, 3, 8, 8}, dt, 2);
  auto s = make_pair(Shape{1, 8}, dt, 3);
  ModConvParams p;
  p.pad_top = p.pad_bottom = 0;
  cuda::ModConvArgs a;
  a.x = &x.dv, a.w = &w.dv, a.s = &s.dv;
  auto y2 = make_pair(Shape{1, 2, 4, 8}, dt, 4);
  cuda::modconv(p, a, y2.dv, nullptr, nullptr);  // well-formed: 2 rows
  auto y4 = make_pair(Shape{1, 4, 4, 8}, dt, 5);
  CHECK_THROWS_AS(cuda::modconv(p, a, y4.dv, nullptr, nullptr), Error);
  ModConvParams pu;
  pu.up = true, pu.pad_bottom = 0;
  auto y9 = make_pair(Shape{1, 9, 9, 8}, dt, 6);
  CHECK_THROWS_AS(cuda::modconv(pu, a, y9.dv, nullptr, nullptr), Error);
}
