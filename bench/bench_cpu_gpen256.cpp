// The GPEN-256 layers (channel multiplier 1, narrow 0.5) whose path is a choice, measured side by
// side in one process so a loaded machine disturbs both alike (--benchmark_enable_random_interleaving
// with --benchmark_repetitions=N; compare the "min" rows):
//  - small stride-1 3x3 modconvs (8 to 48 px, 512 -> 256 channels with the noise concat, and
//    GPEN-512's 1024 -> 512 at 32 px): the implicit-GEMM path against Winograd F(4x4, 3x3)
//    (kernels/cpu/winograd.h);
//  - the to_rgb modconvs (1x1, 3 outputs): the dot-product path (modconv_rgb.h) against the GEMM;
//  - the blurs (upfirdn2d) of the up and down paths, memory-bound, so in GB/s (input + output).
// Counters: GFLOP/s of the direct conv's FLOPs (effective rates for Winograd), GB/s, and the
// context names the ISA path with its peak FLOPs per cycle per core.
//   build/bench/bench_cpu_gpen256 --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/cpu_context.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/modconv_internal.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/winograd.h"

using namespace gpen;

namespace {

enum class Path { automatic, direct, wino4 };

struct ModConvData {
  ModConvParams p;
  int64_t H, W, C1, C2, Co;
  std::vector<float> x, x2, x2s{0.7f}, x2b, w, s, d, bias, res, y;
  std::vector<unsigned char> ws;
  TensorView xv, x2v, x2sv, x2bv, wv, sv, dv, bv, rv, yv;
  cpu::ModConvArgs a;

  ModConvData(const ModConvParams& params, int64_t h, int64_t wd, int64_t c1, int64_t c2, int64_t co, Path path)
      : p(params), H(h), W(wd), C1(c1), C2(c2), Co(co) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    auto fill = [&](std::vector<float>& v, int64_t n) {
      v.resize(static_cast<size_t>(n));
      for (float& e : v) e = u(rng);
    };
    const int64_t C = C1 + C2;
    fill(x, H * W * C1), fill(x2, H * W * C2), fill(x2b, C2);
    fill(w, p.k * p.k * C * Co), fill(s, C), fill(d, Co), fill(bias, Co), fill(res, H * W * Co), fill(y, H * W * Co);
    xv = make_view(x.data(), DType::f32, Shape{1, H, W, C1});
    x2v = make_view(x2.data(), DType::f32, Shape{1, H, W, C2});
    x2sv = make_view(x2s.data(), DType::f32, Shape{1});
    x2bv = make_view(x2b.data(), DType::f32, Shape{C2});
    wv = make_view(w.data(), DType::f32, Shape{p.k, p.k, C, Co});
    sv = make_view(s.data(), DType::f32, Shape{1, C});
    dv = make_view(d.data(), DType::f32, Shape{1, Co});
    bv = make_view(bias.data(), DType::f32, Shape{Co});
    rv = make_view(res.data(), DType::f32, Shape{1, H, W, Co});
    yv = make_view(y.data(), DType::f32, Shape{1, H, W, Co});
    a.x = &xv, a.w = &wv, a.s = &sv, a.x2 = &x2v, a.x2_scale = &x2sv, a.x2_bias = &x2bv;
    p.has_x2 = true;
    if (p.has_demod) a.d = &dv;
    if (p.has_bias) a.bias = &bv;
    if (p.has_residual) a.residual = &rv;
    const Shape xc{1, H, W, C};
    const int nt = cpu::num_threads();
    size_t bytes = 0;
    if (path == Path::direct) bytes = cpu::modconv_detail::modconv_direct_workspace_bytes(p, xc, yv.shape, nt);
    wino4_ = cpu::winograd_form(4, H, W, cpu_options_from_env());
    if (path == Path::wino4) bytes = cpu::winograd_detail::modconv_winograd_workspace_bytes(wino4_, xc, yv.shape, nt);
    if (path == Path::automatic) bytes = cpu::modconv_workspace_bytes(p, xc, yv.shape, nt, cpu_options_from_env());
    ws.resize(bytes);
    run_ = path;
  }
  void run() {
    if (run_ == Path::direct) return cpu::modconv_detail::modconv_direct(p, a, yv, ws.data());
    if (run_ == Path::wino4) return cpu::winograd_detail::modconv_winograd(wino4_, p, a, yv, ws.data());
    cpu::modconv(p, a, yv, ws.data(), cpu_options_from_env());
  }
  double flops() const { return 2.0 * double(H) * double(W) * p.k * p.k * double(C1 + C2) * double(Co); }
  double bytes() const { return 4.0 * double(H) * double(W) * double(C1 + C2 + Co * (p.has_residual ? 2 : 1)); }

 private:
  Path run_ = Path::automatic;
  cpu::ConvChoice wino4_;  // F(4x4), fused where GPEN_CPU_WINO_FUSED and the shape let it
};

void BM_styled(benchmark::State& st, int64_t r, int64_t c, Path path) {
  ModConvParams p;
  p.k = 3;
  p.x2_act = Activation::scaled_leaky();
  p.has_demod = p.has_bias = true;
  p.act = Activation::scaled_leaky();
  ModConvData m(p, r, r, c, c, c, path);
  m.run();
  for (auto _ : st) {
    m.run();
    benchmark::ClobberMemory();
  }
  st.counters["GFLOP/s"] = benchmark::Counter(m.flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_to_rgb(benchmark::State& st, int64_t r, int64_t c, Path path) {
  ModConvParams p;
  p.k = 1;
  p.x2_act = Activation::scaled_leaky();
  p.has_bias = p.has_residual = true;
  ModConvData m(p, r, r, c, c, 3, path);
  m.run();
  for (auto _ : st) {
    m.run();
    benchmark::ClobberMemory();
  }
  st.counters["GFLOP/s"] = benchmark::Counter(m.flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["GB/s"] = benchmark::Counter(m.bytes() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// Blur with the GPEN 4x4 kernel; H, W the input, pads p0, p1, up.
void BM_blur(benchmark::State& st, int64_t H, int64_t C, int up, int p0, int p1) {
  UpFirDn2dParams p;
  p.up_x = p.up_y = up;
  p.pad_x0 = p.pad_y0 = p0;
  p.pad_x1 = p.pad_y1 = p1;
  p.kh = p.kw = 4;
  const float b4[4] = {1, 3, 3, 1};
  for (float u : b4)
    for (float v : b4) p.kernel.push_back(u * v * float(up * up) / 64.0f);
  const int64_t Ho = H * up + p0 + p1 - 3;
  const Shape xs{1, H, H, C}, ys{1, Ho, Ho, C};
  std::vector<float> x(static_cast<size_t>(xs.numel()), 0.5f), y(static_cast<size_t>(ys.numel()));
  std::vector<unsigned char> ws(cpu::upfirdn2d_workspace_bytes(p, xs, ys, 0));
  const TensorView xv = make_view(x.data(), DType::f32, xs), yv = make_view(y.data(), DType::f32, ys);
  cpu::upfirdn2d(p, xv, yv, ws.data());
  for (auto _ : st) {
    cpu::upfirdn2d(p, xv, yv, ws.data());
    benchmark::ClobberMemory();
  }
  st.counters["GB/s"] = benchmark::Counter(4e-9 * double(xs.numel() + ys.numel()),
                                           benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

int main(int argc, char** argv) {
  // GPEN-256's 256 channels (512 in with the noise concat) at 8 to 48 px; GPEN-512's 32x32 layer
  // (1024 -> 512) for the same rule at twice the channels.
  // GPEN-256's larger layers too (64x64 256 -> 128 .. 256x256 64 -> 32), against the direct path.
  for (auto rc : {std::pair<int64_t, int64_t>{8, 256}, {16, 256}, {32, 256}, {48, 256}, {32, 512}, {64, 128}, {128, 64},
                  {256, 32}}) {
    const std::string n = "styled_" + std::to_string(rc.first) + (rc.second == 256 ? "" : "_c" + std::to_string(rc.second)) + "/";
    benchmark::RegisterBenchmark((n + "direct").c_str(), BM_styled, rc.first, rc.second, Path::direct)
        ->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark((n + "winograd4").c_str(), BM_styled, rc.first, rc.second, Path::wino4)
        ->Unit(benchmark::kMillisecond)->UseRealTime();
    // The path the model takes (conv_select.h's rule: at 8x8 the fused form, F(4x4) on AVX-512, F(2x2) on AVX2).
    benchmark::RegisterBenchmark((n + "auto").c_str(), BM_styled, rc.first, rc.second, Path::automatic)
        ->Unit(benchmark::kMillisecond)->UseRealTime();
  }
  for (auto rc : {std::pair<int64_t, int64_t>{32, 256}, {64, 128}, {128, 64}, {256, 32}}) {
    const std::string n = "to_rgb_" + std::to_string(rc.first) + "/";
    benchmark::RegisterBenchmark((n + "gemm").c_str(), BM_to_rgb, rc.first, rc.second, Path::direct)->Unit(benchmark::kMillisecond)->UseRealTime();
    benchmark::RegisterBenchmark((n + "auto").c_str(), BM_to_rgb, rc.first, rc.second, Path::automatic)->Unit(benchmark::kMillisecond)->UseRealTime();
  }
  benchmark::RegisterBenchmark("blur_up_257x32", BM_blur, 257, 32, 1, 1, 1)->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark("blur_down_256x32", BM_blur, 256, 32, 1, 2, 2)->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark("blur_up_129x64", BM_blur, 129, 64, 1, 1, 1)->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark("rgb_upsample_128x3", BM_blur, 128, 3, 2, 2, 1)->Unit(benchmark::kMillisecond)->UseRealTime();
  return gpen::bench::run_benchmarks(argc, argv);
}
