// 8-bit conv weights on the CUDA kernels (emulated by default): the modconv (WMMA for f16 / bf16,
// SIMT for f32) and conv2d (WMMA, SIMT) kernels staging int8 / e4m3 codes and their scales into
// the B tile give exactly what they give on the dequantised weights stored in the activation
// dtype (the dequantised value rounded once to T either way), and a small GPEN with 8-bit weights
// in fp16 against the CPU's fp32 on the fp32 weights.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
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

// An 8-bit weight on the device (codes and scales) and its dequantised values in dtype dt.
struct DevWeight8 {
  DeviceBuffer codes, scale, deq;
  TensorView v8, vd;
};

DevWeight8 dev_weight8(const Shape& s, DType q, DType dt, uint32_t seed) {
  const int64_t n = s.numel(), cout = s[s.rank - 1];
  std::vector<float> f = cuda_test::random_values(static_cast<size_t>(n), seed, -0.2f, 0.2f);
  const Quantized8 qz = quantize8(f.data(), n, cout, q);
  const std::vector<float> d = dequantize8(qz.codes.data(), qz.scale.data(), n, cout, q);
  DevWeight8 w;
  w.codes = DeviceBuffer(static_cast<size_t>(n));
  w.codes.upload(qz.codes);
  w.scale = DeviceBuffer(static_cast<size_t>(cout) * 4);
  w.scale.upload(qz.scale);
  const std::vector<uint8_t> enc = cuda_test::encode(d, dt);
  w.deq = DeviceBuffer(enc.size());
  w.deq.upload(enc);
  w.v8 = make_view(w.codes.get(), q, s);
  w.v8.qscale = w.scale.as<const float>();
  w.vd = make_view(w.deq.get(), dt, s);
  return w;
}

std::vector<uint8_t> bytes_of(const cuda_test::TensorPair& y) {
  return y.dev.download<uint8_t>(y.host.size() * dtype_size(y.dt));
}

}  // namespace

TEST_CASE("cuda weights8: modconv and conv2d kernels on 8-bit weights equal them on the dequantised weights") {
  for (DType q : {DType::i8, DType::f8e4m3}) {
    for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
      CAPTURE(std::string(dtype_name(q)));
      CAPTURE(std::string(dtype_name(dt)));
      // modconv: a 3x3 with x2, demod and bias (16-wide vector staging), a transposed one, and one
      // with an odd channel count (element staging).
      struct MC {
        int n, h, w, c1, c2, cout, k;
        bool up;
      } mcs[] = {{2, 6, 7, 16, 16, 32, 3, false}, {1, 4, 5, 16, 0, 24, 3, true}, {1, 5, 5, 12, 0, 9, 3, false}};
      for (const MC& c : mcs) {
        CAPTURE(c.cout);
        const int C = c.c1 + c.c2;
        const int ho = c.up ? 2 * c.h + 1 : c.h, wo = c.up ? 2 * c.w + 1 : c.w;
        const Shape ys{c.n, ho, wo, c.cout};
        auto x = cuda_test::make_pair(Shape{c.n, c.h, c.w, c.c1}, dt, 11);
        auto x2 = cuda_test::make_pair(Shape{c.n, c.h, c.w, std::max(c.c2, 1)}, dt, 12);
        auto x2s = cuda_test::make_pair(Shape{1}, dt, 13, 0.5f, 1.0f);
        auto x2b = cuda_test::make_pair(Shape{std::max(c.c2, 1)}, dt, 14);
        auto s = cuda_test::make_pair(Shape{c.n, C}, dt, 16, -1.5f, 1.5f);
        auto d = cuda_test::make_pair(Shape{c.n, c.cout}, dt, 17, 0.5f, 2.0f);
        auto b = cuda_test::make_pair(Shape{c.cout}, dt, 18);
        auto y8 = cuda_test::make_pair(ys, dt, 20), yd = cuda_test::make_pair(ys, dt, 20);
        DevWeight8 w = dev_weight8(Shape{c.k, c.k, C, c.cout}, q, dt, 15);
        ModConvParams p;
        p.k = c.k, p.up = c.up;
        p.has_x2 = c.c2 > 0, p.x2_act = Activation::scaled_leaky();
        p.has_demod = p.has_bias = !c.up;
        if (!c.up) p.act = Activation::scaled_leaky();
        const Shape xcat{c.n, c.h, c.w, C};
        DeviceBuffer ws(cuda::modconv_workspace_bytes(p, xcat, ys));
        for (int pass = 0; pass < 2; ++pass) {
          cuda::ModConvArgs a;
          a.x = &x.dv, a.s = &s.dv, a.w = pass ? &w.vd : &w.v8;
          if (p.has_x2) a.x2 = &x2.dv, a.x2_scale = &x2s.dv, a.x2_bias = &x2b.dv;
          if (!c.up) a.d = &d.dv, a.bias = &b.dv;
          cuda::modconv(p, a, pass ? yd.dv : y8.dv, ws.bytes() ? ws.get() : nullptr, nullptr);
        }
        CHECK(bytes_of(y8) == bytes_of(yd));
      }
      // conv2d on each kernel the dtype has.
      std::vector<cuda::ConvAlgo> algos = {cuda::ConvAlgo::simt};
      if (dt != DType::f32) algos.push_back(cuda::ConvAlgo::tensor_core);
      for (cuda::ConvAlgo algo : algos) {
        CAPTURE(algo == cuda::ConvAlgo::simt);
        Conv2dParams p;
        p.kh = p.kw = 3;
        p.stride_h = p.stride_w = 2;
        p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
        p.has_bias = true;
        p.act = Activation::scaled_leaky();
        const Shape xs{2, 9, 9, 20}, ys{2, 5, 5, 40};
        auto x = cuda_test::make_pair(xs, dt, 31);
        auto b = cuda_test::make_pair(Shape{40}, dt, 32);
        auto y8 = cuda_test::make_pair(ys, dt, 33), yd = cuda_test::make_pair(ys, dt, 33);
        DevWeight8 w = dev_weight8(Shape{3, 3, 20, 40}, q, dt, 34);
        DeviceBuffer ws(cuda::conv2d_workspace_bytes(p, xs, ys));
        cuda::conv2d(p, x.dv, w.v8, &b.dv, nullptr, y8.dv, ws.bytes() ? ws.get() : nullptr, nullptr, algo);
        cuda::conv2d(p, x.dv, w.vd, &b.dv, nullptr, yd.dv, ws.bytes() ? ws.get() : nullptr, nullptr, algo);
        CHECK(bytes_of(y8) == bytes_of(yd));
      }
    }
  }
  // Missing scales: an error before any launch.
  DevWeight8 w = dev_weight8(Shape{3, 3, 8, 8}, DType::i8, DType::f16, 1);
  TensorView bad = w.v8;
  bad.qscale = nullptr;
  auto x = cuda_test::make_pair(Shape{1, 4, 4, 8}, DType::f16, 2), y = cuda_test::make_pair(Shape{1, 4, 4, 8}, DType::f16, 3);
  Conv2dParams p;
  p.kh = p.kw = 3;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  CHECK_THROWS_AS(cuda::conv2d(p, x.dv, bad, nullptr, nullptr, y.dv, nullptr, nullptr), Error);
}

TEST_CASE("cuda weights8: a small GPEN with int8 / fp8 conv weights against the CPU's fp32 weights") {
  const int faces = 1, size = 32;
  std::vector<float> in(static_cast<size_t>(faces) * size * size * 3);
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& v : in) v = u(rng);
  auto run = [&](Backend& be, DType precision, DType q) {
    GpenConfig c = cuda_test::small_gpen(precision);
    c.quant8 = q;
    auto m = GpenModel::synthetic(c, be, 9);
    m->prepare(faces);
    std::vector<float> out(in.size());
    m->run(in.data(), out.data());
    return std::make_pair(out, m->weights_bytes());
  };
  auto cpu = make_cpu_backend();
  const auto ref = run(*cpu, DType::f32, DType::f32);
  DeviceOptions o;
  o.kind = DeviceKind::cuda;
  // Measured (emulator; the model, seed and input of test_cuda_accuracy.cpp; 3072 values):
  //   int8: CUDA fp16 54.9 dB (max abs 8.4e-3), CPU fp32 on the int8 weights 54.8 dB (8.5e-3)
  //   fp8:  CUDA fp16 48.4 dB (max abs 1.6e-2), CPU fp32 on the fp8 weights 48.4 dB (1.6e-2)
  //   CUDA fp16 vs CPU fp32 on the same 8-bit weights: int8 63.7 dB (max rel 1.1e-3), fp8 60.6 dB
  //   (1.8e-3): the fp16 path's own error (60.5 dB, max rel 2.5e-3 on fp16 weights)
  // (the fp16 path on fp16 weights: 60.5 dB; bf16: 52.6 dB). int8 must stay above the bf16 path's
  // 52.6 dB, the bar for a format to be recommended (docs/memory.md, "8-bit weights"): 53.5 dB
  // leaves 1.4 dB. fp8 falls below that bar (so it is offered with a warning only); 46 dB
  // leaves it 2.4 dB against regressions (1.7x the mse).
  struct Case {
    DType q;
    double min_psnr_gpu, min_psnr_cpu;
  } cases[] = {{DType::i8, 53.5, 53.5}, {DType::f8e4m3, 46.0, 46.0}};
  size_t fp16_weights = 0;
  {
    auto be = cuda::make_cuda_backend(o);
    auto m = GpenModel::synthetic(cuda_test::small_gpen(DType::f16), *be, 9);
    m->prepare(faces);
    fp16_weights = m->weights_bytes();
  }
  for (const Case& c : cases) {
    CAPTURE(std::string(dtype_name(c.q)));
    auto be = cuda::make_cuda_backend(o);
    const auto gpu = run(*be, DType::f16, c.q);
    const auto cpu8 = run(*cpu, DType::f32, c.q);
    const OutputDiff dg = compare_outputs(gpu.first.data(), ref.first.data(), faces, size);
    const OutputDiff dc = compare_outputs(cpu8.first.data(), ref.first.data(), faces, size);
    // The GPU path against the CPU on the same 8-bit weights: only the fp16 rounding of the
    // activations (and of the dequantised weights) differs, as on the fp16 path.
    const OutputDiff dgc = compare_outputs(gpu.first.data(), cpu8.first.data(), faces, size);
    MESSAGE(std::string(dtype_name(c.q)) << ": emulated CUDA fp16 vs CPU fp32, both on the 8-bit weights: max rel "
                                         << dgc.max_rel << ", PSNR " << dgc.psnr_8bit << " dB");
    CHECK(dgc.max_rel < 10.0 / 2048);  // test_cuda_accuracy's fp16 bound
    CHECK(dgc.psnr_8bit >= 55.0);
    MESSAGE(std::string(dtype_name(c.q)) << " weights: emulated CUDA fp16 vs CPU fp32 on fp32 weights: max abs " << dg.max_abs
                            << ", PSNR 8-bit " << dg.psnr_8bit << " dB; CPU fp32 on the 8-bit weights: max abs "
                            << dc.max_abs << ", PSNR " << dc.psnr_8bit << " dB; weights " << gpu.second << " vs "
                            << fp16_weights << " bytes (fp16)");
    CHECK(dg.nonfinite == 0);
    CHECK(dg.psnr_8bit >= c.min_psnr_gpu);
    CHECK(dc.psnr_8bit >= c.min_psnr_cpu);
    CHECK(gpu.second < fp16_weights);
  }
}
