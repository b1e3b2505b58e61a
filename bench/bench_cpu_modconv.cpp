// The modulated convs of the GPEN-512 decoder (channel multiplier 2, narrow 1) at batch 1, one
// benchmark per layer shape plus the whole decoder's modconvs in sequence. Counters: GFLOP/s
// (2 * MACs of the conv, by wall time) and, for the sequence, its GFLOP; CPU time of the sequence
// is summed over all threads. Threads: OMP_NUM_THREADS (default: all cores).
//   build-*/bench/bench_cpu_modconv --benchmark_filter=gpen512/conv_512
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/cpu_context.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/ops.h"

using namespace gpen;

namespace {

int64_t gpen512_channels(int64_t r) { return r >= 512 ? 64 : r == 256 ? 128 : r == 128 ? 256 : 512; }

struct Layer {
  std::string name;
  ModConvParams p;
  int64_t H, W, C1, C2, Co;
  bool has_x2() const { return C2 > 0; }
  int64_t Ho() const { return p.up ? 2 * (H - 1) + p.k : H; }
  int64_t Wo() const { return p.up ? 2 * (W - 1) + p.k : W; }
  double flops() const { return 2.0 * double(H) * double(W) * p.k * p.k * double(C1 + C2) * double(Co); }
};

std::vector<Layer> gpen512_layers() {
  std::vector<Layer> L;
  ModConvParams styled;
  styled.k = 3;
  styled.x2_act = Activation::scaled_leaky();
  styled.has_demod = styled.has_bias = true;
  styled.act = Activation::scaled_leaky();
  ModConvParams up;
  up.k = 3;
  up.up = true;
  up.x2_act = Activation::scaled_leaky();
  ModConvParams rgb;
  rgb.k = 1;
  rgb.x2_act = Activation::scaled_leaky();
  rgb.has_bias = true;
  const int64_t c4 = gpen512_channels(4);
  L.push_back({"conv1_4", styled, 4, 4, c4, 0, c4});
  L.push_back({"to_rgb_4", rgb, 4, 4, c4, c4, 3});
  for (int64_t r = 8; r <= 512; r *= 2) {
    const int64_t cp = gpen512_channels(r / 2), c = gpen512_channels(r);
    L.push_back({"up_" + std::to_string(r), up, r / 2, r / 2, cp, cp, c});
    L.push_back({"conv_" + std::to_string(r), styled, r, r, c, c, c});
    Layer t{"to_rgb_" + std::to_string(r), rgb, r, r, c, c, 3};
    t.p.has_residual = true;
    L.push_back(t);
  }
  for (Layer& l : L) l.p.has_x2 = l.has_x2();
  return L;
}

// Owns every tensor a layer reads and writes, filled with plausible values.
struct LayerData {
  const Layer l;
  std::vector<float> x, x2, x2s{0.7f}, x2b, w, s, d, bias, res, y;
  std::unique_ptr<unsigned char[]> ws;
  TensorView xv, x2v, x2sv, x2bv, wv, sv, dv, bv, rv, yv;
  cpu::ModConvArgs a;

  explicit LayerData(const Layer& layer) : l(layer) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    auto fill = [&](std::vector<float>& v, int64_t n) {
      v.resize(static_cast<size_t>(n));
      for (float& e : v) e = u(rng);
    };
    const int64_t C = l.C1 + l.C2;
    fill(x, l.H * l.W * l.C1);
    fill(w, l.p.k * l.p.k * C * l.Co);
    fill(s, C);
    fill(d, l.Co);
    fill(bias, l.Co);
    fill(y, l.Ho() * l.Wo() * l.Co);
    xv = make_view(x.data(), DType::f32, Shape{1, l.H, l.W, l.C1});
    wv = make_view(w.data(), DType::f32, Shape{l.p.k, l.p.k, C, l.Co});
    sv = make_view(s.data(), DType::f32, Shape{1, C});
    dv = make_view(d.data(), DType::f32, Shape{1, l.Co});
    bv = make_view(bias.data(), DType::f32, Shape{l.Co});
    yv = make_view(y.data(), DType::f32, Shape{1, l.Ho(), l.Wo(), l.Co});
    a.x = &xv, a.w = &wv, a.s = &sv;
    if (l.has_x2()) {
      fill(x2, l.H * l.W * l.C2);
      fill(x2b, l.C2);
      x2v = make_view(x2.data(), DType::f32, Shape{1, l.H, l.W, l.C2});
      x2sv = make_view(x2s.data(), DType::f32, Shape{1});
      x2bv = make_view(x2b.data(), DType::f32, Shape{l.C2});
      a.x2 = &x2v, a.x2_scale = &x2sv, a.x2_bias = &x2bv;
    }
    if (l.p.has_demod) a.d = &dv;
    if (l.p.has_bias) a.bias = &bv;
    if (l.p.has_residual) {
      fill(res, l.Ho() * l.Wo() * l.Co);
      rv = make_view(res.data(), DType::f32, yv.shape);
      a.residual = &rv;
    }
    const size_t bytes =
        cpu::modconv_workspace_bytes(l.p, Shape{1, l.H, l.W, C}, yv.shape, cpu::num_threads(), cpu_options_from_env());
    ws.reset(new unsigned char[bytes]);
  }
  void run() { cpu::modconv(l.p, a, yv, ws.get(), cpu_options_from_env()); }
};

void BM_layer(benchmark::State& st, Layer l) {
  LayerData data(l);
  data.run();  // warm-up: first touch of the workspace and output pages
  for (auto _ : st) {
    data.run();
    benchmark::ClobberMemory();
  }
  st.counters["GFLOP/s"] = benchmark::Counter(l.flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["threads"] = cpu::num_threads();
}

void BM_gpen512_all(benchmark::State& st) {
  std::vector<std::unique_ptr<LayerData>> layers;
  double flops = 0.0;
  for (const Layer& l : gpen512_layers()) {
    layers.push_back(std::make_unique<LayerData>(l));
    flops += l.flops();
  }
  for (auto& d : layers) d->run();  // warm-up
  for (auto _ : st)
    for (auto& d : layers) d->run();
  st.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["GFLOP"] = flops * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  static const std::vector<Layer> layers = gpen512_layers();
  for (const Layer& l : layers)
    benchmark::RegisterBenchmark(("gpen512/" + l.name).c_str(), BM_layer, l)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  benchmark::RegisterBenchmark("gpen512/all_modconvs", BM_gpen512_all)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime()
      ->MeasureProcessCPUTime()
      ->Iterations(1);
  gpen::bench::add_cpu_context();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
