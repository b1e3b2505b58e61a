// gpen bench: time per face (median and spread after warm-up), peak RSS and the plan's memory
// figures, for a converted model or an architecture with synthetic weights.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <cmath>
#include <random>

#include "apps/cli.h"
#include "apps/format.h"
#include "apps/peer.h"
#include "engine/models/gpen_model.h"
#include "kernels/cpu/ops.h"

namespace gpen::cli {
namespace {

struct BenchArgs {
  std::string model;
  std::string arch = "gpen";
  int size = 512;
  int channel_multiplier = 2;
  double narrow = 1.0;
  int batch = 1;
  int runs = 5;
  int warmup = 1;
  std::string device = "cpu";
  bool json = false;
  bool compare_pytorch = false;
};

double peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
}

void run_bench(const BenchArgs& a) {
  GPEN_CHECK(a.device == "cpu" || a.device == "auto",
             "--device " + a.device + ": only the CPU backend runs GPEN in this build (see docs/status.md)");
  GPEN_CHECK(a.runs >= 1 && a.warmup >= 0, "--runs must be >= 1 and --warmup >= 0");
  auto backend = make_cpu_backend();
  std::unique_ptr<GpenModel> m;
  if (!a.model.empty()) {
    m = GpenModel::open(a.model, *backend);
  } else {
    GPEN_CHECK(a.arch == "gpen", "unknown --arch '" + a.arch + "' (known: gpen)");
    GpenConfig c;
    c.size = a.size;
    c.channel_multiplier = a.channel_multiplier;
    c.narrow = a.narrow;
    m = GpenModel::synthetic(c, *backend);
  }
  auto t_plan = std::chrono::steady_clock::now();
  m->prepare(a.batch);
  double prepare_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_plan).count();
  const int S = m->size();
  std::vector<float> in(static_cast<size_t>(a.batch) * S * S * 3), out(in.size());
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> ud(-1.f, 1.f);
  for (auto& v : in) v = ud(rng);
  for (int i = 0; i < a.warmup; ++i) m->run(in.data(), out.data());
  std::vector<double> ms;
  for (int i = 0; i < a.runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    m->run(in.data(), out.data());
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  double median = ms[ms.size() / 2];
  double per_face = median / a.batch;
  for (float v : out) GPEN_CHECK(std::isfinite(v), "the generator produced a non-finite value");
  const MemoryPlan& p = m->plan();
  nlohmann::json j = {{"model", a.model.empty() ? "synthetic" : a.model},
                      {"config", {{"size", S}, {"channel_multiplier", m->config().channel_multiplier},
                                  {"narrow", m->config().narrow}}},
                      {"device", backend->name()},
                      {"threads", cpu::num_threads()},
                      {"batch", a.batch},
                      {"runs", a.runs},
                      {"median_ms", median},
                      {"min_ms", ms.front()},
                      {"max_ms", ms.back()},
                      {"ms_per_face", per_face},
                      {"prepare_ms", prepare_ms},
                      {"peak_rss_mib", peak_rss_mib()},
                      {"weights_bytes", p.weights_bytes},
                      {"arena_bytes", p.arena_bytes},
                      {"workspace_bytes", p.workspace_bytes},
                      {"lower_bound_bytes", p.lower_bound_bytes}};
  if (a.compare_pytorch) {
    nlohmann::json peer = run_pytorch_gpen_bench(a.model, S, m->config().channel_multiplier, m->config().narrow,
                                                 a.batch, a.runs, a.warmup);
    j["pytorch"] = peer;
    if (peer.contains("ms_per_face")) j["speedup_vs_pytorch"] = peer["ms_per_face"].get<double>() / per_face;
  }
  if (a.json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("%s on %s (%d threads), batch %d, %d runs after %d warm-up\n", m->config().describe().c_str(),
              backend->name(), cpu::num_threads(), a.batch, a.runs, a.warmup);
  std::printf("  time per face   %.1f ms (median; batch min %.1f, max %.1f ms)\n", per_face, ms.front(), ms.back());
  std::printf("  peak RSS        %.1f MiB\n", peak_rss_mib());
  std::printf("  weights         %s, arena %s, workspace %s (lower bound %s)\n", human_bytes(p.weights_bytes).c_str(),
              human_bytes(p.arena_bytes).c_str(), human_bytes(p.workspace_bytes).c_str(),
              human_bytes(p.lower_bound_bytes).c_str());
  if (j.contains("pytorch")) {
    const auto& pt = j["pytorch"];
    if (pt.contains("ms_per_face"))
      std::printf("  PyTorch         %.1f ms per face, peak RSS %.1f MiB -> engine is %.2fx faster\n",
                  pt["ms_per_face"].get<double>(), pt.value("peak_rss_mib", 0.0), j["speedup_vs_pytorch"].get<double>());
    else
      std::printf("  PyTorch         not measured: %s\n", pt.value("error", std::string("?")).c_str());
  }
}

BenchArgs g_args;

Command reg(
    "bench", "Time GPEN per face, peak RSS and planned memory (optionally against PyTorch)",
    [](CLI::App& sub) {
      sub.add_option("-m,--model", g_args.model, "Converted GPEN model (.gpw); without it, synthetic weights");
      sub.add_option("--arch", g_args.arch, "Architecture for synthetic weights: gpen")->capture_default_str();
      sub.add_option("--size", g_args.size, "GPEN resolution for synthetic weights")->capture_default_str();
      sub.add_option("--channel-multiplier", g_args.channel_multiplier, "GPEN channel multiplier")->capture_default_str();
      sub.add_option("--narrow", g_args.narrow, "GPEN narrow factor")->capture_default_str();
      sub.add_option("--batch", g_args.batch, "Faces per run")->capture_default_str()->check(CLI::PositiveNumber);
      sub.add_option("--runs", g_args.runs, "Timed runs")->capture_default_str();
      sub.add_option("--warmup", g_args.warmup, "Untimed runs first")->capture_default_str();
      sub.add_option("--device", g_args.device, "cpu (cuda: see docs/status.md)")->capture_default_str();
      sub.add_flag("--json", g_args.json, "Print JSON");
      sub.add_flag("--compare-pytorch", g_args.compare_pytorch,
                   "Also time tests/reference/gpen_reference.py on the same configuration (needs python3-torch)");
      sub.callback([] { run_bench(g_args); });
    },
    60);

}  // namespace
}  // namespace gpen::cli
