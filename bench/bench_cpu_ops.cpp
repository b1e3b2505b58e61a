// CPU kernel throughput at the shapes that dominate GPEN-512 and at every conv shape of
// RetinaFace mobilenet0.25 at 1024x768 (names stem / dw3x3 / conv1x1 / conv3x3).
// Each benchmark runs at 1 and 2 threads (the last argument); FLOP/s counts 2 flops per
// multiply-add of the op's definition (skipped zero taps of upsampling are not counted).
//   build/bench/bench_cpu_ops --benchmark_filter=conv
//   build/bench/bench_cpu_ops --benchmark_filter='dw3x3|stem' --benchmark_repetitions=5
// On a shared machine use repetitions: the least disturbed run has the "min" time.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "bench/cpu_context.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/ops.h"

using namespace gpen;

namespace {

std::vector<float> random_vec(size_t n, float scale = 1.0f) {
  std::mt19937 rng(42);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Args: H, W (input), Cin, Cout, k, stride, groups, threads. Same padding (k / 2) and a fused bias
// + activation, as in both models' layers.
void run_conv2d(benchmark::State& state, Activation act, float weight_scale) {
  const int64_t H = state.range(0), W = state.range(1), C = state.range(2), Co = state.range(3);
  const int k = static_cast<int>(state.range(4)), s = static_cast<int>(state.range(5));
  const int groups = static_cast<int>(state.range(6)), threads = static_cast<int>(state.range(7));
  Conv2dParams p;
  p.kh = p.kw = k;
  p.stride_h = p.stride_w = s;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = k / 2;
  p.groups = groups;
  p.has_bias = true;
  p.act = act;
  const int64_t Ho = (H + 2 * (k / 2) - k) / s + 1, Wo = (W + 2 * (k / 2) - k) / s + 1;
  const Shape xs{1, H, W, C}, ys{1, Ho, Wo, Co}, wsh{k, k, C / groups, Co};
  auto x = random_vec(static_cast<size_t>(xs.numel()));
  auto w = random_vec(static_cast<size_t>(wsh.numel()), weight_scale);
  auto b = random_vec(static_cast<size_t>(Co));
  std::vector<float> y(static_cast<size_t>(ys.numel()));
  cpu::set_num_threads(threads);
  std::vector<unsigned char> ws(cpu::conv2d_workspace_bytes(p, xs, ys, threads, cpu_options_from_env()));
  const TensorView xv = make_view(x.data(), DType::f32, xs), wv = make_view(w.data(), DType::f32, wsh);
  const TensorView bv = make_view(b.data(), DType::f32, {Co}), yv = make_view(y.data(), DType::f32, ys);
  for (auto _ : state) {
    cpu::conv2d(p, xv, wv, &bv, nullptr, yv, ws.data(), cpu_options_from_env());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * static_cast<double>(ys.numel()) * k * k * (C / groups);
  state.counters["FLOP/s"] = benchmark::Counter(flops * static_cast<double>(state.iterations()),
                                                benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
  // Bytes of input read and output written once: the floor for the memory-bound layers.
  state.counters["B/s"] = benchmark::Counter(4.0 * static_cast<double>(xs.numel() + ys.numel()) *
                                                 static_cast<double>(state.iterations()),
                                             benchmark::Counter::kIsRate, benchmark::Counter::kIs1024);
  state.counters["ws_KiB"] = static_cast<double>(ws.size()) / 1024.0;
}

// GPEN: scaled leaky ReLU (x0.2 slope, x sqrt(2)).
void BM_Conv2d(benchmark::State& state) { run_conv2d(state, Activation::scaled_leaky(), 0.05f); }
// RetinaFace: folded conv + BatchNorm + leaky ReLU 0.1.
void BM_RetinaConv(benchmark::State& state) { run_conv2d(state, Activation::leaky(0.1f), 0.1f); }

// Args: H, W, C, up, down, pad0, pad1, kernel scale x 4, threads; GPEN's [1,3,3,1] blur.
void BM_UpFirDn2d(benchmark::State& state) {
  const int64_t H = state.range(0), W = state.range(1), C = state.range(2);
  const int up = static_cast<int>(state.range(3)), down = static_cast<int>(state.range(4));
  const int p0 = static_cast<int>(state.range(5)), p1 = static_cast<int>(state.range(6));
  const int threads = static_cast<int>(state.range(8));
  UpFirDn2dParams p;
  p.up_x = p.up_y = up;
  p.down_x = p.down_y = down;
  p.pad_x0 = p.pad_y0 = p0;
  p.pad_x1 = p.pad_y1 = p1;
  p.kh = p.kw = 4;
  const float b4[4] = {1, 3, 3, 1};
  for (float u : b4)
    for (float v : b4) p.kernel.push_back(u * v * static_cast<float>(state.range(7)) / 256.0f);
  const int64_t Ho = (H * up + p0 + p1 - 4) / down + 1, Wo = (W * up + p0 + p1 - 4) / down + 1;
  const Shape xs{1, H, W, C}, ys{1, Ho, Wo, C};
  auto x = random_vec(static_cast<size_t>(xs.numel()));
  std::vector<float> y(static_cast<size_t>(ys.numel()));
  cpu::set_num_threads(threads);
  std::vector<unsigned char> ws(cpu::upfirdn2d_workspace_bytes(p, xs, ys, threads));
  const TensorView xv = make_view(x.data(), DType::f32, xs), yv = make_view(y.data(), DType::f32, ys);
  for (auto _ : state) {
    cpu::upfirdn2d(p, xv, yv, ws.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * static_cast<double>(ys.numel()) * 16 / (up * up);
  state.counters["FLOP/s"] = benchmark::Counter(flops * static_cast<double>(state.iterations()),
                                                benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

// Args: H, W, C, threads. In-place bias + scaled leaky ReLU (memory bound).
void BM_BiasAct(benchmark::State& state) {
  const int64_t H = state.range(0), W = state.range(1), C = state.range(2);
  const int threads = static_cast<int>(state.range(3));
  BiasActParams p;
  p.has_bias = true;
  p.act = Activation::scaled_leaky();
  const Shape xs{1, H, W, C};
  auto x = random_vec(static_cast<size_t>(xs.numel()));
  auto b = random_vec(static_cast<size_t>(C));
  cpu::set_num_threads(threads);
  const TensorView xv = make_view(x.data(), DType::f32, xs), bv = make_view(b.data(), DType::f32, {C});
  for (auto _ : state) {
    cpu::bias_act(p, xv, &bv, xv);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * xs.numel() * 8);
}

void ConvArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"H", "W", "Cin", "Cout", "k", "s", "g", "thr"});
  for (int t : {1, 2}) {
    b->Args({256, 256, 64, 64, 3, 1, 1, t});     // GPEN-512 encoder/decoder, 256 px level (cm=2: 128 ch)
    b->Args({128, 128, 128, 128, 3, 1, 1, t});   // 128 px level
    b->Args({256, 256, 128, 128, 3, 1, 1, t});   // GPEN-512 decoder conv at 256 px (2*128 in -> 128 out, minus concat)
    b->Args({64, 64, 1024, 512, 3, 1, 1, t});    // deepest decoder conv (concat 1024 -> 512)
    b->Args({256, 256, 128, 128, 3, 2, 1, t});   // stride-2 encoder conv 256 -> 128 px
    b->Args({256, 256, 128, 64, 1, 1, 1, t});    // 1x1
    b->Args({256, 256, 64, 64, 3, 1, 64, t});    // depthwise 3x3
  }
}

void UpFirDnArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"H", "W", "C", "up", "down", "p0", "p1", "k4", "thr"});
  for (int t : {1, 2}) {
    b->Args({256, 256, 64, 1, 1, 2, 2, 4, t});   // blur before a stride-2 conv (k)
    b->Args({513, 513, 64, 1, 1, 1, 1, 16, t});  // blur after a transposed conv (4k), 512 px level
    b->Args({256, 256, 3, 2, 1, 2, 1, 16, t});   // ToRGB skip upsample (4k, up 2)
  }
}

// The machine is shared: with --benchmark_repetitions=N, the least disturbed run has the "min"
// time and the "max" FLOP/s.
double min_of(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end()); }
double max_of(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); }

// RetinaFace mobilenet0.25 at 1024x768: every distinct conv shape (and the ResNet-50 stem).
void StemArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"H", "W", "Cin", "Cout", "k", "s", "g", "thr"});
  for (int t : {1, 2}) {
    b->Args({768, 1024, 3, 8, 3, 2, 1, t});   // mobilenet0.25 stem
    b->Args({768, 1024, 3, 64, 7, 2, 1, t});  // ResNet-50 stem
  }
}

void DepthwiseArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"H", "W", "Cin", "Cout", "k", "s", "g", "thr"});
  for (int t : {1, 2}) {
    b->Args({384, 512, 8, 8, 3, 1, 8, t});
    b->Args({384, 512, 16, 16, 3, 2, 16, t});
    b->Args({192, 256, 32, 32, 3, 1, 32, t});
    b->Args({192, 256, 32, 32, 3, 2, 32, t});
    b->Args({96, 128, 64, 64, 3, 1, 64, t});
    b->Args({96, 128, 64, 64, 3, 2, 64, t});
    b->Args({48, 64, 128, 128, 3, 1, 128, t});
    b->Args({48, 64, 128, 128, 3, 2, 128, t});
    b->Args({24, 32, 256, 256, 3, 1, 256, t});
  }
}

void PointwiseArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"H", "W", "Cin", "Cout", "k", "s", "g", "thr"});
  for (int t : {1, 2}) {
    b->Args({384, 512, 8, 16, 1, 1, 1, t});
    b->Args({192, 256, 16, 32, 1, 1, 1, t});
    b->Args({192, 256, 32, 32, 1, 1, 1, t});
    b->Args({96, 128, 32, 64, 1, 1, 1, t});
    b->Args({96, 128, 64, 64, 1, 1, 1, t});     // stage1.5 and fpn.output1
    b->Args({48, 64, 128, 128, 1, 1, 1, t});
    b->Args({96, 128, 64, 20, 1, 1, 1, t});     // landmark head (classes: 4, boxes: 8)
    b->Args({96, 128, 64, 4, 1, 1, 1, t});
  }
}

void Conv3x3Args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"H", "W", "Cin", "Cout", "k", "s", "g", "thr"});
  for (int t : {1, 2}) {
    b->Args({96, 128, 64, 64, 3, 1, 1, t});  // fpn.merge1
    b->Args({96, 128, 64, 32, 3, 1, 1, t});  // ssh1.conv3X3
    b->Args({96, 128, 64, 16, 3, 1, 1, t});  // ssh1.conv5X5_1
    b->Args({96, 128, 16, 16, 3, 1, 1, t});  // ssh1.conv5X5_2 and the 7x7 pair
  }
}

}  // namespace

BENCHMARK(BM_Conv2d)->Apply(ConvArgs)->UseRealTime()->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond)->ComputeStatistics("min", min_of)->ComputeStatistics("max", max_of);
BENCHMARK(BM_UpFirDn2d)->Apply(UpFirDnArgs)->UseRealTime()->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond)
    ->ComputeStatistics("min", min_of)->ComputeStatistics("max", max_of);
BENCHMARK(BM_BiasAct)->ArgNames({"H", "W", "C", "thr"})->Args({512, 512, 128, 1})->Args({512, 512, 128, 2})
    ->UseRealTime()->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond)->ComputeStatistics("min", min_of)->ComputeStatistics("max", max_of);

BENCHMARK(BM_RetinaConv)->Name("stem")->Apply(StemArgs)->UseRealTime()->MeasureProcessCPUTime()
    ->Unit(benchmark::kMillisecond)->ComputeStatistics("min", min_of)->ComputeStatistics("max", max_of);
BENCHMARK(BM_RetinaConv)->Name("dw3x3")->Apply(DepthwiseArgs)->UseRealTime()->MeasureProcessCPUTime()
    ->Unit(benchmark::kMillisecond)->ComputeStatistics("min", min_of)->ComputeStatistics("max", max_of);
BENCHMARK(BM_RetinaConv)->Name("conv1x1")->Apply(PointwiseArgs)->UseRealTime()->MeasureProcessCPUTime()
    ->Unit(benchmark::kMillisecond)->ComputeStatistics("min", min_of)->ComputeStatistics("max", max_of);
BENCHMARK(BM_RetinaConv)->Name("conv3x3")->Apply(Conv3x3Args)->UseRealTime()->MeasureProcessCPUTime()
    ->Unit(benchmark::kMillisecond)->ComputeStatistics("min", min_of)->ComputeStatistics("max", max_of);

int main(int argc, char** argv) {
  return gpen::bench::run_benchmarks(argc, argv);
}
