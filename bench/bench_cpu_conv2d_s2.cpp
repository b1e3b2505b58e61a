// The 3x3 stride-2 conv2ds of the GPEN encoders (ecd1-4 of GPEN-256, ecd1-6 of GPEN-512: pad 0
// on the blurred map, input 2 Ho + 1; batch 1, bias + leaky relu): conv2d's direct path against
// the polyphase Winograd (kernels/cpu/winograd_s2.h) in the same process, so that on a loaded
// machine both see the same load. CPU time of the whole process (MeasureProcessCPUTime): with
// OMP_NUM_THREADS=1 the figure does not depend on what else the machine runs. GFLOP/s count the
// direct conv's FLOPs (an effective rate for Winograd). Also RetinaFace R50's stride-2 3x3 convs (pad 1).
//   OMP_NUM_THREADS=1 build/bench/bench_cpu_conv2d_s2 --benchmark_repetitions=3
//       --benchmark_enable_random_interleaving=true
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench/cpu_context.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/winograd_s2.h"

using namespace gpen;
namespace wd = gpen::cpu::winograd_detail;

namespace {


struct S2 {
  std::string name;
  int64_t Ho, C, Co;  // input 2 Ho + 1 square x C, output Ho x Ho x Co (pad 0)
  int64_t Wo = 0;     // R50 (pad 1): output Ho x Wo, input 2 Ho x 2 Wo
};

int64_t ch512(int64_t r) { return r >= 512 ? 64 : r == 256 ? 128 : r == 128 ? 256 : 512; }
int64_t ch256(int64_t r) { return r >= 256 ? 32 : r == 128 ? 64 : r == 64 ? 128 : 256; }

std::vector<S2> layers() {
  std::vector<S2> L;
  for (int64_t r = 256; r >= 32; r /= 2) L.push_back({"gpen256/ecd_" + std::to_string(r / 2), r / 2, ch256(r), ch256(r / 2)});
  for (int64_t r = 512; r >= 16; r /= 2) L.push_back({"gpen512/ecd_" + std::to_string(r / 2), r / 2, ch512(r), ch512(r / 2)});
  // RetinaFace R50's stride-2 3x3 convs at 1024x768 (bench_cpu_r50.cpp): layer2-4's first conv2.
  L.push_back({"r50/layer2_96x128", 96, 128, 128, 128});
  L.push_back({"r50/layer3_48x64", 48, 256, 256, 64});
  L.push_back({"r50/layer4_24x32", 24, 512, 512, 32});
  return L;
}

struct Data {
  S2 l;
  Conv2dParams p;
  std::vector<float> x, w, b, y;
  TensorView xv, wv, bv, yv;
  std::vector<unsigned char> ws;
  int m;
  Data(const S2& s, int m_) : l(s), m(m_) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    auto fill = [&](std::vector<float>& v, int64_t n) {
      v.resize(static_cast<size_t>(n));
      for (float& e : v) e = d(rng);
    };
    const int pad = l.Wo ? 1 : 0;
    const int64_t Wo = l.Wo ? l.Wo : l.Ho, H = pad ? 2 * l.Ho : 2 * l.Ho + 1, W = pad ? 2 * Wo : 2 * Wo + 1;
    fill(x, H * W * l.C), fill(w, 9 * l.C * l.Co), fill(b, l.Co), fill(y, l.Ho * Wo * l.Co);
    xv = make_view(x.data(), DType::f32, Shape{1, H, W, l.C});
    wv = make_view(w.data(), DType::f32, Shape{3, 3, l.C, l.Co});
    bv = make_view(b.data(), DType::f32, Shape{l.Co});
    yv = make_view(y.data(), DType::f32, Shape{1, l.Ho, Wo, l.Co});
    p.kh = p.kw = 3, p.stride_h = p.stride_w = 2, p.has_bias = true;
    p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = pad;
    p.act.slope = 0.2f, p.act.gain = 1.41421356f;
    const int nt = cpu::num_threads();
    ws.resize(m ? wd::conv2d_wino_s2_workspace_bytes(m, xv.shape, yv.shape, nt)
                : cpu::conv2d_workspace_bytes(p, xv.shape, yv.shape, nt, bench::direct_cpu_options()));
  }
  void run() {
    if (m)
      wd::conv2d_wino_s2(m, p, xv, wv, &bv, nullptr, yv, ws.data());
    else
      cpu::conv2d(p, xv, wv, &bv, nullptr, yv, ws.data(), bench::direct_cpu_options());
  }
};

void BM_s2(benchmark::State& st, S2 l, int m) {
  Data d(l, m);
  d.run();  // first touch of the workspace and the output
  for (auto _ : st) {
    d.run();
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * 9 * double(l.Ho) * double(l.Wo ? l.Wo : l.Ho) * double(l.C) * double(l.Co);
  st.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["workspace_MiB"] = double(d.ws.size()) / (1 << 20);
}

}  // namespace

int main(int argc, char** argv) {
  bench::direct_cpu_options();
  static const std::vector<S2> ls = layers();
  for (const S2& l : ls)
    for (int m : {0, 4, 2})
      benchmark::RegisterBenchmark((l.name + (m ? "/winograd" + std::to_string(m) : std::string("/direct"))).c_str(),
                                   BM_s2, l, m)
          ->Unit(benchmark::kMillisecond)
          ->MeasureProcessCPUTime();
  benchmark::AddCustomContext("cpu_isa", cpu::isa_name(cpu::cpu_isa()));
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
