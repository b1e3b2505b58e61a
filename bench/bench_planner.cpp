// Planning time per strategy on network-like buffer sets (a chain with residual/skip reads and a
// down/up resolution schedule) and on uniform random interval sets.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>

#include "engine/plan/planner.h"

namespace {

std::vector<gpen::LiveBuffer> network(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<gpen::LiveBuffer> b(n);
  for (int i = 0; i < n; ++i) {
    int level = std::min(i, n - 1 - i) * 5 / n;
    size_t hw = size_t{512 * 512} >> (2 * level);
    b[i].size = hw * (size_t{16} << (level + rng() % 3)) / 4;
    b[i].first = i;
    b[i].last = std::min(n, i + 1);
    if (rng() % 4 == 0) b[i].last = std::min(n, i + 2 + static_cast<int>(rng() % 7));
  }
  return b;
}

std::vector<gpen::LiveBuffer> uniform(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<gpen::LiveBuffer> b(n);
  for (auto& x : b) {
    x.first = static_cast<int>(rng() % n);
    x.last = std::min(n - 1, x.first + static_cast<int>(rng() % (n / 4 + 1)));
    x.size = 1 + rng() % (1 << 20);
  }
  return b;
}

void run(benchmark::State& state, const char* strategy, bool net) {
  int n = static_cast<int>(state.range(0));
  auto buffers = net ? network(n, 1) : uniform(n, 1);
  auto s = gpen::make_strategy(strategy);
  gpen::Placement p;
  for (auto _ : state) {
    p = s->place(buffers, gpen::kArenaAlignment);
    benchmark::DoNotOptimize(p.arena_bytes);
  }
  state.counters["arena/lb"] =
      static_cast<double>(p.arena_bytes) / gpen::lower_bound_bytes(buffers, gpen::kArenaAlignment);
}

void BM_Network(benchmark::State& st, const char* s) { run(st, s, true); }
void BM_Uniform(benchmark::State& st, const char* s) { run(st, s, false); }

}  // namespace

BENCHMARK_CAPTURE(BM_Network, best_fit, "best-fit")->Arg(100)->Arg(500)->Arg(2000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Network, greedy_size, "greedy-size")->Arg(100)->Arg(500)->Arg(2000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Uniform, best_fit, "best-fit")->Arg(100)->Arg(500)->Arg(2000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Uniform, greedy_size, "greedy-size")->Arg(100)->Arg(500)->Arg(2000)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
