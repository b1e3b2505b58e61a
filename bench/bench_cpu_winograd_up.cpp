// The 3x3 stride-2 transposed modconvs of the GPEN-512 and GPEN-256 decoders (batch 1): the
// direct path against the polyphase Winograd (kernels/cpu/winograd_up.h) in the same process,
// so that on a loaded machine the two see the same load (run with --benchmark_repetitions=N
// --benchmark_enable_random_interleaving=true). GFLOP/s count the direct conv's FLOPs (an
// effective rate for Winograd). Threads: OMP_NUM_THREADS (default: all cores).
//   build/bench/bench_cpu_winograd_up --benchmark_filter=gpen512 --benchmark_repetitions=3
//       --benchmark_enable_random_interleaving=true
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/cpu_context.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/winograd_up.h"

using namespace gpen;
namespace wd = gpen::cpu::winograd_detail;

namespace {


struct Up {
  std::string name;
  int64_t H, C, Co;  // input H x H x C (the concat), output 2H + 1 x 2H + 1 x Co
};

// Channels by resolution: GPEN-512 (multiplier 2, narrow 1) and GPEN-256 (multiplier 1, narrow 0.5).
int64_t ch512(int64_t r) { return r >= 512 ? 64 : r == 256 ? 128 : r == 128 ? 256 : 512; }
int64_t ch256(int64_t r) { return r >= 256 ? 32 : r == 128 ? 64 : r == 64 ? 128 : 256; }

std::vector<Up> layers() {
  std::vector<Up> L;
  for (int64_t r = 16; r <= 512; r *= 2) L.push_back({"gpen512/up_" + std::to_string(r), r / 2, 2 * ch512(r / 2), ch512(r)});
  for (int64_t r = 16; r <= 256; r *= 2) L.push_back({"gpen256/up_" + std::to_string(r), r / 2, 2 * ch256(r / 2), ch256(r)});
  return L;
}

struct Data {
  Up l;
  ModConvParams p;
  std::vector<float> x, w, s, y;
  TensorView xv, wv, sv, yv;
  cpu::ModConvArgs a;
  std::vector<unsigned char> ws;
  int m;
  cpu::ConvChoice wino;  // m != 0: the Winograd form (fused where GPEN_CPU_WINO_FUSED and the shape let it)
  Data(const Up& u, int m_) : l(u), m(m_) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    auto fill = [&](std::vector<float>& v, int64_t n) {
      v.resize(static_cast<size_t>(n));
      for (float& e : v) e = d(rng);
    };
    const int64_t Ho = 2 * l.H + 1;
    fill(x, l.H * l.H * l.C), fill(w, 9 * l.C * l.Co), fill(s, l.C), fill(y, Ho * Ho * l.Co);
    xv = make_view(x.data(), DType::f32, Shape{1, l.H, l.H, l.C});
    wv = make_view(w.data(), DType::f32, Shape{3, 3, l.C, l.Co});
    sv = make_view(s.data(), DType::f32, Shape{1, l.C});
    yv = make_view(y.data(), DType::f32, Shape{1, Ho, Ho, l.Co});
    a.x = &xv, a.w = &wv, a.s = &sv;
    p.up = true;
    const int nt = cpu::num_threads();
    wino = cpu::winograd_up_form(m, 1, l.H, l.H, l.C, l.Co, cpu_options_from_env());
    ws.resize(m ? wd::modconv_winograd_up_workspace_bytes(wino, xv.shape, yv.shape, nt)
                : cpu::modconv_workspace_bytes(p, xv.shape, yv.shape, nt, bench::direct_cpu_options()));
  }
  void run() {
    if (m)
      wd::modconv_winograd_up(wino, p, a, yv, ws.data());
    else
      cpu::modconv(p, a, yv, ws.data(), bench::direct_cpu_options());
  }
};

void BM_up(benchmark::State& st, Up l, int m) {
  Data d(l, m);
  d.run();  // first touch of the workspace and the output
  for (auto _ : st) {
    d.run();
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * 9 * double(l.H) * double(l.H) * double(l.C) * double(l.Co);
  st.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["workspace_MiB"] = double(d.ws.size()) / (1 << 20);
}

}  // namespace

int main(int argc, char** argv) {
  bench::direct_cpu_options();
  static const std::vector<Up> ls = layers();
  for (const Up& l : ls)
    for (int m : {0, 4, 2})
      benchmark::RegisterBenchmark((l.name + (m ? "/winograd" + std::to_string(m) : std::string("/direct"))).c_str(),
                                   BM_up, l, m)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
  benchmark::AddCustomContext("cpu_isa", cpu::isa_name(cpu::cpu_isa()));
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
