// CPU kernel throughput at the shapes that dominate CodeFormer-512 and RestoreFormer++-512 beside
// their convolutions: GroupNorm (+ SiLU) on VQGAN's 512- and 256-pixel maps, the transformer's
// dense layers and attention over 256 tokens, and the codebook lookup. Each at 1 and 2 threads
// (the last argument).
//   build/bench/bench_cpu_vqgan --benchmark_repetitions=5
// On a shared machine the least disturbed run has the "min" time.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <vector>

#include "bench/cpu_context.h"
#include "kernels/cpu/ops.h"

using namespace gpen;

namespace {

std::vector<float> random_vec(size_t n, float scale = 1.0f, float mean = 0.0f) {
  std::mt19937 rng(42);
  std::normal_distribution<float> d(mean, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

double min_of(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end()); }

// Args: H, W, C, silu, threads. 32 groups, affine, eps 1e-6 (VQGAN's normalize).
void BM_GroupNorm(benchmark::State& state) {
  const int64_t H = state.range(0), W = state.range(1), C = state.range(2);
  const GroupNormParams p{32, 1e-6f, true, state.range(3) != 0};
  const Shape xs{1, H, W, C};
  auto x = random_vec(static_cast<size_t>(xs.numel()), 2.0f, 0.5f);
  auto g = random_vec(static_cast<size_t>(C), 0.2f, 1.0f), b = random_vec(static_cast<size_t>(C), 0.1f);
  std::vector<float> y(x.size());
  cpu::set_num_threads(static_cast<int>(state.range(4)));
  const TensorView xv = make_view(x.data(), DType::f32, xs), yv = make_view(y.data(), DType::f32, xs);
  const TensorView gv = make_view(g.data(), DType::f32, {C}), bv = make_view(b.data(), DType::f32, {C});
  for (auto _ : state) {
    cpu::group_norm(p, xv, &gv, &bv, yv);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * xs.numel() * 8);
}

// Args: rows, in, out, threads: the transformer's feed-forward layers over 256 tokens.
void BM_Dense(benchmark::State& state) {
  const int64_t N = state.range(0), I = state.range(1), O = state.range(2);
  DenseParams p;
  p.has_bias = true;
  auto x = random_vec(static_cast<size_t>(N * I)), w = random_vec(static_cast<size_t>(O * I), 0.05f);
  auto b = random_vec(static_cast<size_t>(O));
  std::vector<float> y(static_cast<size_t>(N * O));
  cpu::set_num_threads(static_cast<int>(state.range(3)));
  const TensorView xv = make_view(x.data(), DType::f32, {N, I}), wv = make_view(w.data(), DType::f32, {O, I});
  const TensorView bv = make_view(b.data(), DType::f32, {O}), yv = make_view(y.data(), DType::f32, {N, O});
  for (auto _ : state) {
    cpu::dense(p, xv, wv, &bv, yv);
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(N * I * O * state.iterations()),
                                                benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

// Args: L, E, heads, threads: self-attention with a position embedding (CodeFormer's layers).
void BM_Attention(benchmark::State& state) {
  const int64_t L = state.range(0), E = state.range(1);
  const int threads = static_cast<int>(state.range(3));
  AttentionParams p;
  p.heads = static_cast<int>(state.range(2));
  p.has_pos = true;
  auto x = random_vec(static_cast<size_t>(L * E)), pos = random_vec(static_cast<size_t>(L * E));
  auto wi = random_vec(static_cast<size_t>(3 * E * E), 0.05f), bi = random_vec(static_cast<size_t>(3 * E));
  auto wo = random_vec(static_cast<size_t>(E * E), 0.05f), bo = random_vec(static_cast<size_t>(E));
  std::vector<float> y(x.size());
  cpu::set_num_threads(threads);
  const TensorView xv = make_view(x.data(), DType::f32, {1, L, E}), pv = make_view(pos.data(), DType::f32, {1, L, E});
  const TensorView wiv = make_view(wi.data(), DType::f32, {3 * E, E}), biv = make_view(bi.data(), DType::f32, {3 * E});
  const TensorView wov = make_view(wo.data(), DType::f32, {E, E}), bov = make_view(bo.data(), DType::f32, {E});
  const TensorView yv = make_view(y.data(), DType::f32, {1, L, E});
  std::vector<unsigned char> ws(cpu::attention_workspace_bytes(p, Shape{1, L, E}, threads) + 64);
  AttentionArgs a{&xv, &pv, &wiv, &biv, &wov, &bov, nullptr};
  for (auto _ : state) {
    cpu::attention(p, a, yv, ws.data());
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * static_cast<double>(L * E * E * 4 + 2 * L * L * E);
  state.counters["FLOP/s"] = benchmark::Counter(flops * static_cast<double>(state.iterations()),
                                                benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

// Args: H, W, C, K, threads: the quantizer's nearest entry by distance (RestoreFormer++'s).
void BM_CodeArgmin(benchmark::State& state) {
  const int64_t H = state.range(0), W = state.range(1), C = state.range(2), K = state.range(3);
  const CodeLookupParams p{CodeLookup::argmin};
  auto z = random_vec(static_cast<size_t>(H * W * C)), cb = random_vec(static_cast<size_t>(K * C));
  std::vector<float> y(z.size());
  std::vector<int32_t> idx(static_cast<size_t>(H * W));
  cpu::set_num_threads(static_cast<int>(state.range(4)));
  const TensorView zv = make_view(z.data(), DType::f32, {1, H, W, C}), cv = make_view(cb.data(), DType::f32, {K, C});
  const TensorView yv = make_view(y.data(), DType::f32, {1, H, W, C});
  const TensorView iv = make_view(idx.data(), DType::i32, {1, H, W});
  for (auto _ : state) {
    cpu::code_lookup(p, zv, cv, yv, iv);
    benchmark::ClobberMemory();
  }
}

#define GPEN_VQGAN_BENCH(fn, ...)                                                                       \
  BENCHMARK(fn)->ArgNames(__VA_ARGS__)->UseRealTime()->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond) \
      ->ComputeStatistics("min", min_of)

GPEN_VQGAN_BENCH(BM_GroupNorm, {"H", "W", "C", "silu", "thr"})
    ->Args({512, 512, 64, 1, 1})->Args({512, 512, 64, 1, 2})->Args({512, 512, 64, 0, 2})
    ->Args({256, 256, 128, 1, 2})->Args({512, 512, 128, 1, 2});
GPEN_VQGAN_BENCH(BM_Dense, {"N", "in", "out", "thr"})
    ->Args({256, 512, 1024, 1})->Args({256, 512, 1024, 2})->Args({256, 1024, 512, 2});
GPEN_VQGAN_BENCH(BM_Attention, {"L", "E", "heads", "thr"})->Args({256, 512, 8, 1})->Args({256, 512, 8, 2});
GPEN_VQGAN_BENCH(BM_CodeArgmin, {"H", "W", "C", "K", "thr"})->Args({16, 16, 256, 1024, 2});

}  // namespace

int main(int argc, char** argv) {
  return gpen::bench::run_benchmarks(argc, argv);
}
