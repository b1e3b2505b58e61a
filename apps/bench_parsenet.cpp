#include "apps/bench_parsenet.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "apps/bench_profile.h"
#include "engine/core/bytes.h"
#include "apps/peer.h"
#include "engine/core/rss.h"
#include "engine/core/error.h"
#include "engine/models/parsenet.h"
#include "kernels/cpu/ops.h"

namespace gpen::cli {

void run_parsenet_bench(const ParseBenchArgs& a) {
  GPEN_CHECK(!a.model.empty(), "--arch parsenet needs the converted weights: -m PARSENET.gpw");
  GPEN_CHECK(a.runs >= 1 && a.warmup >= 0, "--runs must be >= 1 and --warmup >= 0");
  auto backend = make_cpu_backend();
  ParseNetModel net(a.model, *backend);
  const int S = a.size;
  net.prepare(S, S);
  const double flops = graph_flops(net.graph());
  std::vector<float> in(static_cast<size_t>(S) * S * 3), logits(static_cast<size_t>(S) * S * kParseClasses);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& v : in) v = u(rng);
  std::vector<double> ms;
  for (int i = 0; i < a.warmup + a.runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    net.run(in.data(), S, S, logits.data());
    if (i >= a.warmup) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  const MemoryPlan& p = net.plan();
  nlohmann::json j = {{"arch", "parsenet"},         {"model", a.model},
                      {"size", S},                  {"device", "cpu"},
                      {"threads", cpu::num_threads()}, {"runs", a.runs},
                      {"median_ms", median},        {"min_ms", ms.front()},
                      {"max_ms", ms.back()},        {"gflop", flops / 1e9},
                      {"gflops", flops / 1e9 / (median / 1e3)},
                      {"weights_bytes", p.weights_bytes}, {"arena_bytes", p.arena_bytes},
                      {"workspace_bytes", p.workspace_bytes}, {"peak_rss_mib", peak_rss_mib()}};
  if (a.profile) {
    std::vector<std::vector<double>> runs;
    for (int i = 0; i < std::max(3, a.runs); ++i) runs.push_back(net.run_profiled(in.data()));
    j["profile"] = profile_summary(net.graph(), runs);
    add_cpu_peak(j["profile"], net.graph(), cpu::num_threads());
  }
  if (a.compare_pytorch) {
    nlohmann::json peer = run_pytorch_parsenet_bench(a.pytorch_pth, S, a.runs, cpu::num_threads(), a.pytorch_timeout);
    j["pytorch"] = peer;
    if (peer.contains("median_ms")) {
      j["speedup_vs_pytorch"] = peer["median_ms"].get<double>() / median;
      j["pytorch"]["gflops"] = flops / 1e9 / (peer["median_ms"].get<double>() / 1e3);
    }
  }
  if (a.json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("ParseNet %dx%d on cpu (%d threads), %.1f GFLOP per run, %d runs after %d warm-up\n", S, S,
              cpu::num_threads(), flops / 1e9, a.runs, a.warmup);
  std::printf("  time per run    %.1f ms (median; min %.1f, max %.1f ms), %.1f GFLOP/s\n", median, ms.front(),
              ms.back(), j["gflops"].get<double>());
  std::printf("  weights %s, arena %s, workspace %s, peak RSS %.0f MiB\n", human_bytes(double(p.weights_bytes)).c_str(),
              human_bytes(double(p.arena_bytes)).c_str(), human_bytes(double(p.workspace_bytes)).c_str(),
              peak_rss_mib());
  if (j.contains("pytorch")) {
    const auto& pt = j["pytorch"];
    if (pt.contains("median_ms"))
      std::printf("  PyTorch         %.1f ms per run (%d threads, torch %s), %.1f GFLOP/s -> engine is %.2fx faster\n",
                  pt["median_ms"].get<double>(), pt.value("threads", 0), pt.value("torch", std::string("?")).c_str(),
                  pt["gflops"].get<double>(), j["speedup_vs_pytorch"].get<double>());
    else
      std::printf("  PyTorch         not measured: %s\n", pt.value("error", std::string("?")).c_str());
  }
  if (j.contains("profile")) print_profile(j["profile"], 12);
}

}  // namespace gpen::cli
