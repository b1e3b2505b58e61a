// 8-bit weights on the CUDA kernels (emulated by default), second part: per-group scales in the
// modconv and conv2d B staging and 8-bit dense weights in the dense kernel give exactly what the
// kernels give on the dequantised weights stored in the activation dtype (the dequantised value
// rounded once to T either way), and a small GPEN with grouped int8 convs and int8 dense layers in
// fp16 against the CPU on the same weights and against the fp32 weights.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engine/models/gpen_model.h"
#include "engine/photo/output_diff.h"
#include "engine/runtime/cuda/backend_cuda.h"
#include "engine/runtime/device.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops_gpen.h"
#include "tests/cuda_emu/small_gpen.h"
#include "tests/cuda_emu/test_util.h"
#include "weights/quant8.h"

using namespace gpen;
using cuda_test::DeviceBuffer;

namespace {

struct DevW8 {
  DeviceBuffer codes, scale, deq;
  TensorView v8, vd;
  int64_t group = 0;
};

DevW8 dev_w8(const Shape& s, DType q, DType dt, int64_t group, uint32_t seed) {
  const int64_t n = s.numel();
  std::vector<float> f = cuda_test::random_values(static_cast<size_t>(n), seed, -0.2f, 0.2f);
  // Rows of very different magnitude, so that per-group scales differ from per-channel ones.
  for (int64_t i = 0; i < n; ++i) f[static_cast<size_t>(i)] *= 1.0f + 7.0f * static_cast<float>((i / 13) % 3 == 0);
  const Quantized8Grouped qz = quantize8_grouped(f.data(), s, q, group);
  const std::vector<float> d = dequantize8_grouped(qz.codes.data(), qz.scale.data(), s, q, qz.group);
  DevW8 w;
  w.group = qz.group;
  w.codes = DeviceBuffer(static_cast<size_t>(n));
  w.codes.upload(qz.codes);
  w.scale = DeviceBuffer(qz.scale.size() * 4);
  w.scale.upload(qz.scale);
  const std::vector<uint8_t> enc = cuda_test::encode(d, dt);
  w.deq = DeviceBuffer(enc.size());
  w.deq.upload(enc);
  w.v8 = make_view(w.codes.get(), q, s);
  w.v8.qscale = w.scale.as<const float>();
  w.v8.qgroup = qz.group;
  w.vd = make_view(w.deq.get(), dt, s);
  return w;
}

std::vector<uint8_t> bytes_of(const cuda_test::TensorPair& y) {
  return y.dev.download<uint8_t>(y.host.size() * dtype_size(y.dt));
}

}  // namespace

TEST_CASE("cuda weights8 groups: modconv and conv2d and dense on grouped or dense 8-bit weights equal the dequantised") {
  for (DType q : {DType::i8, DType::f8e4m3}) {
    for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
      CAPTURE(std::string(dtype_name(q)));
      CAPTURE(std::string(dtype_name(dt)));
      struct MC {
        int n, h, w, c, cout;
        bool up;
        int64_t group;
      } mcs[] = {{1, 6, 7, 32, 32, false, 16}, {1, 4, 5, 16, 24, true, 24}, {1, 5, 5, 12, 9, false, 20}};
      for (const MC& c : mcs) {
        CAPTURE(c.cout);
        const int ho = c.up ? 2 * c.h + 1 : c.h, wo = c.up ? 2 * c.w + 1 : c.w;
        const Shape ys{c.n, ho, wo, c.cout};
        auto x = cuda_test::make_pair(Shape{c.n, c.h, c.w, c.c}, dt, 11);
        auto s = cuda_test::make_pair(Shape{c.n, c.c}, dt, 16, -1.5f, 1.5f);
        auto d = cuda_test::make_pair(Shape{c.n, c.cout}, dt, 17, 0.5f, 2.0f);
        auto b = cuda_test::make_pair(Shape{c.cout}, dt, 18);
        auto y8 = cuda_test::make_pair(ys, dt, 20), yd = cuda_test::make_pair(ys, dt, 20);
        DevW8 w = dev_w8(Shape{3, 3, c.c, c.cout}, q, dt, c.group, 15);
        REQUIRE(w.group > 0);
        ModConvParams p;
        p.k = 3, p.up = c.up;
        p.has_demod = p.has_bias = !c.up;
        if (!c.up) p.act = Activation::scaled_leaky();
        DeviceBuffer ws(cuda::modconv_workspace_bytes(p, Shape{c.n, c.h, c.w, c.c}, ys));
        for (int pass = 0; pass < 2; ++pass) {
          cuda::ModConvArgs a;
          a.x = &x.dv, a.s = &s.dv, a.w = pass ? &w.vd : &w.v8;
          if (!c.up) a.d = &d.dv, a.bias = &b.dv;
          cuda::modconv(p, a, pass ? yd.dv : y8.dv, ws.bytes() ? ws.get() : nullptr, nullptr);
        }
        CHECK(bytes_of(y8) == bytes_of(yd));
      }
      std::vector<cuda::ConvAlgo> algos = {cuda::ConvAlgo::simt};
      if (dt != DType::f32) algos.push_back(cuda::ConvAlgo::tensor_core);
      for (cuda::ConvAlgo algo : algos) {
        CAPTURE(algo == cuda::ConvAlgo::simt);
        Conv2dParams p;
        p.kh = p.kw = 3;
        p.stride_h = p.stride_w = 2;
        p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
        p.has_bias = true;
        const Shape xs{1, 9, 9, 20}, ys{1, 5, 5, 40};
        auto x = cuda_test::make_pair(xs, dt, 31);
        auto b = cuda_test::make_pair(Shape{40}, dt, 32);
        auto y8 = cuda_test::make_pair(ys, dt, 33), yd = cuda_test::make_pair(ys, dt, 33);
        DevW8 w = dev_w8(Shape{3, 3, 20, 40}, q, dt, 32, 34);
        DeviceBuffer ws(cuda::conv2d_workspace_bytes(p, xs, ys));
        cuda::conv2d(p, x.dv, w.v8, &b.dv, nullptr, y8.dv, ws.bytes() ? ws.get() : nullptr, nullptr, algo);
        cuda::conv2d(p, x.dv, w.vd, &b.dv, nullptr, yd.dv, ws.bytes() ? ws.get() : nullptr, nullptr, algo);
        CHECK(bytes_of(y8) == bytes_of(yd));
      }
      for (int64_t group : {int64_t{0}, int64_t{24}}) {
        CAPTURE(group);
        const int out = 20, in = 72;
        auto x = cuda_test::make_pair(Shape{2, in}, dt, 41);
        auto b = cuda_test::make_pair(Shape{out}, dt, 42);
        auto y8 = cuda_test::make_pair(Shape{2, out}, dt, 43), yd = cuda_test::make_pair(Shape{2, out}, dt, 43);
        DevW8 w = dev_w8(Shape{out, in}, q, dt, group, 44);
        DenseParams p;
        p.has_bias = true;
        p.act = Activation::scaled_leaky();
        cuda::dense(p, x.dv, w.v8, &b.dv, y8.dv, nullptr);
        cuda::dense(p, x.dv, w.vd, &b.dv, yd.dv, nullptr);
        CHECK(bytes_of(y8) == bytes_of(yd));
      }
    }
  }
  // An 8-bit dense weight without its scales: an error before the launch.
  DevW8 w = dev_w8(Shape{8, 16}, DType::i8, DType::f16, 0, 1);
  TensorView bad = w.v8;
  bad.qscale = nullptr;
  auto x = cuda_test::make_pair(Shape{1, 16}, DType::f16, 2), y = cuda_test::make_pair(Shape{1, 8}, DType::f16, 3);
  CHECK_THROWS_AS(cuda::dense(DenseParams{}, x.dv, bad, nullptr, y.dv, nullptr), Error);
}

TEST_CASE("cuda weights8 groups: a small GPEN with grouped int8 convs and int8 dense layers") {
  const int size = 32;
  std::vector<float> in(static_cast<size_t>(size) * size * 3);
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& v : in) v = u(rng);
  auto run = [&](Backend& be, DType precision, DType q, DType dense, int layers, int group) {
    GpenConfig c = cuda_test::small_gpen(precision);
    c.quant8 = q;
    c.dense8 = dense;
    c.dense8_layers = layers;
    c.q8_group = group;
    auto m = GpenModel::synthetic(c, be, 9);
    m->prepare(1);
    std::vector<float> out(in.size());
    m->run(in.data(), out.data());
    return out;
  };
  auto cpu = make_cpu_backend();
  const std::vector<float> ref = run(*cpu, DType::f32, DType::f32, DType::f32, kDense8All, 0);
  DeviceOptions o;
  o.kind = DeviceKind::cuda;
  // Measured (emulator; the model, seed and input of test_cuda_weights8, whose per-channel int8
  // convs give 54.9 dB on CUDA fp16): grouped convs (5 groups of 29 rows here) 56.5 dB; with the
  // modulation linears int8 too 54.5 dB; with every dense layer int8 49.9 dB (per-row scales:
  // 48.8 dB), the style MLP's error reaching every layer (docs/memory.md, "8-bit weights"). The
  // bars leave about 1 dB.
  struct Case {
    DType dense;
    int layers, group;
    double min_psnr;
  } cases[] = {{DType::f32, kDense8All, 32, 55.5},
               {DType::i8, kDense8Modulation, 32, 53.5},
               {DType::i8, kDense8All, 0, 47.8},
               {DType::i8, kDense8All, 32, 48.9}};
  for (const Case& c : cases) {
    CAPTURE(std::string(dtype_name(c.dense)));
    CAPTURE(c.layers);
    CAPTURE(c.group);
    auto be = cuda::make_cuda_backend(o);
    const std::vector<float> gpu = run(*be, DType::f16, DType::i8, c.dense, c.layers, c.group);
    const std::vector<float> cpu8 = run(*cpu, DType::f32, DType::i8, c.dense, c.layers, c.group);
    const OutputDiff dg = compare_outputs(gpu.data(), ref.data(), 1, size);
    const OutputDiff dc = compare_outputs(cpu8.data(), ref.data(), 1, size);
    const OutputDiff dgc = compare_outputs(gpu.data(), cpu8.data(), 1, size);
    MESSAGE("int8 convs, group " << c.group << ", dense " << std::string(dtype_name(c.dense)) << " (layers "
                                 << c.layers << "): emulated CUDA fp16 vs fp32 "
                                 << "weights: max abs " << dg.max_abs << ", PSNR " << dg.psnr_8bit
                                 << " dB; CPU fp32: max abs " << dc.max_abs << ", PSNR " << dc.psnr_8bit
                                 << " dB; CUDA vs CPU on the same weights: max rel " << dgc.max_rel << ", PSNR "
                                 << dgc.psnr_8bit << " dB");
    CHECK(dg.nonfinite == 0);
    CHECK(dgc.max_rel < 10.0 / 2048);  // test_cuda_accuracy's fp16 bound
    CHECK(dgc.psnr_8bit >= 55.0);
    CHECK(dg.psnr_8bit >= c.min_psnr);
    CHECK(dc.psnr_8bit >= c.min_psnr);
  }
}
