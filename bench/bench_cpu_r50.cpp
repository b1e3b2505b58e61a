// CPU conv throughput at the conv shapes of RetinaFace ResNet-50 at 1024x768 (the stem, the
// bottleneck 1x1 and 3x3 convs of each layer), 2 threads, GFLOP/s against the direct conv's count
// (a Winograd conv shows its effective rate). GPEN_CPU_CONV / GPEN_CPU_ISA choose the path.
//   build/bench/bench_cpu_r50 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "engine/runtime/env_options.h"
#include "kernels/cpu/ops.h"

using namespace gpen;

namespace {

// Args: H, W (output), Cin, Cout, k, stride, res, threads; same padding (k / 2), bias + relu, and with
// `res` the residual of the bottleneck's last 1x1 conv.
void BM_R50Conv(benchmark::State& state) {
  const int64_t Ho = state.range(0), Wo = state.range(1), C = state.range(2), Co = state.range(3);
  const int k = static_cast<int>(state.range(4)), s = static_cast<int>(state.range(5));
  const bool res = state.range(6) != 0;
  Conv2dParams p;
  p.kh = p.kw = k;
  p.stride_h = p.stride_w = s;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = k / 2;
  p.has_bias = true;
  p.has_residual = res;
  p.act = res ? Activation::none() : Activation::relu();
  const int64_t H = Ho * s, W = Wo * s;
  const Shape xs{1, H, W, C}, ys{1, Ho, Wo, Co}, wsh{k, k, C, Co};
  std::mt19937 rng(7);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(xs.numel())), w(static_cast<size_t>(wsh.numel())), b(static_cast<size_t>(Co));
  for (float& v : x) v = d(rng);
  for (float& v : w) v = 0.05f * d(rng);
  for (float& v : b) v = d(rng);
  std::vector<float> y(static_cast<size_t>(ys.numel())), r(res ? y.size() : 0, 0.5f);
  const int threads = static_cast<int>(state.range(7));
  cpu::set_num_threads(threads);
  const cpu::CpuOptions& o = cpu_options_from_env();
  std::vector<unsigned char> ws(cpu::conv2d_workspace_bytes(p, xs, ys, threads, o));
  const TensorView xv = make_view(x.data(), DType::f32, xs), wv = make_view(w.data(), DType::f32, wsh);
  const TensorView bv = make_view(b.data(), DType::f32, {Co}), yv = make_view(y.data(), DType::f32, ys);
  const TensorView rv = res ? make_view(r.data(), DType::f32, ys) : TensorView{};
  for (auto _ : state) {
    cpu::conv2d(p, xv, wv, &bv, res ? &rv : nullptr, yv, ws.data(), o);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * static_cast<double>(ys.numel()) * k * k * C;
  state.counters["FLOP/s"] = benchmark::Counter(flops * static_cast<double>(state.iterations()),
                                                benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

void R50Args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"Ho", "Wo", "Cin", "Cout", "k", "s", "res", "thr"});
  for (int t : {2, 1}) {
    b->Args({384, 512, 3, 64, 7, 2, 0, t});      // stem
    b->Args({192, 256, 256, 64, 1, 1, 0, t});    // layer1 conv1
    b->Args({192, 256, 64, 64, 3, 1, 0, t});     // layer1 conv2
    b->Args({192, 256, 64, 256, 1, 1, 1, t});    // layer1 conv3 + residual
    b->Args({96, 128, 512, 128, 1, 1, 0, t});    // layer2 conv1
    b->Args({96, 128, 128, 128, 3, 1, 0, t});    // layer2 conv2
    b->Args({96, 128, 128, 512, 1, 1, 1, t});    // layer2 conv3 + residual
    b->Args({48, 64, 1024, 256, 1, 1, 0, t});    // layer3 conv1
    b->Args({48, 64, 256, 256, 3, 1, 0, t});     // layer3 conv2
    b->Args({48, 64, 256, 1024, 1, 1, 1, t});    // layer3 conv3 + residual
    b->Args({24, 32, 2048, 512, 1, 1, 0, t});    // layer4 conv1
    b->Args({24, 32, 512, 512, 3, 1, 0, t});     // layer4 conv2
    b->Args({24, 32, 512, 2048, 1, 1, 1, t});    // layer4 conv3 + residual
    b->Args({24, 32, 256, 64, 3, 1, 0, t});      // SSH at stride 32
    b->Args({24, 32, 64, 64, 3, 1, 0, t});       // SSH at stride 32, the 5x5 / 7x7 branches
    b->Args({12, 16, 512, 512, 3, 1, 0, t});     // layer4 conv2 of a 512x384 photo
    b->Args({12, 16, 64, 64, 3, 1, 0, t});       // its SSH branches
    b->Args({96, 128, 128, 128, 3, 2, 0, t});    // layer2.0 conv2 (stride 2)
    b->Args({48, 64, 256, 256, 3, 2, 0, t});     // layer3.0 conv2 (stride 2)
    b->Args({24, 32, 512, 512, 3, 2, 0, t});     // layer4.0 conv2 (stride 2)
    b->Args({96, 128, 256, 512, 1, 2, 0, t});    // layer2.0 downsample (1x1 stride 2)
  }
}

BENCHMARK(BM_R50Conv)->Apply(R50Args)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
