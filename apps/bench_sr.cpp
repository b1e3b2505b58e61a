// gpen bench --arch realesrnet (apps/bench_sr.h).
#include "apps/bench_sr.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "apps/peer.h"
#include "engine/core/rss.h"
#include "engine/models/rrdbnet.h"
#include "engine/runtime/device.h"
#include "kernels/cpu/ops.h"

namespace gpen::cli {

namespace {

nlohmann::json pytorch_bench(const SrBenchArgs& a, int threads) {
  const char* py = std::getenv("GPEN_PYTHON");
  const std::string dir = reference_dir();
  if (dir.empty()) return {{"error", "the reference scripts are not installed (or set GPEN_REFERENCE_DIR)"}};
  const std::string cmd = std::string(py ? py : "/usr/bin/python3") + " " + dir +
                          "/rrdbnet_reference.py bench --scale " + std::to_string(a.scale) + " --size " +
                          std::to_string(a.size) + " --threads " + std::to_string(threads) + " --runs " +
                          std::to_string(a.runs) + " --num-block " + std::to_string(a.num_block) + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {{"error", "cannot start " + cmd}};
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int st = pclose(p);
  const size_t brace = out.rfind('{');
  if (st != 0 || brace == std::string::npos) return {{"error", "PyTorch peer failed: " + out}};
  try {
    return nlohmann::json::parse(out.substr(brace));
  } catch (const std::exception&) {
    return {{"error", "PyTorch peer printed no JSON: " + out}};
  }
}

}  // namespace

void run_sr_bench(const SrBenchArgs& a) {
  GPEN_CHECK(a.runs >= 1 && a.warmup >= 0, "--runs must be >= 1 and --warmup >= 0");
  DeviceOptions dopt;
  dopt.kind = parse_device(a.device);
  auto backend = make_backend(dopt);
  RrdbConfig c;
  c.scale = a.scale;
  c.num_block = a.num_block;
  auto m = RrdbModel::synthetic(c, *backend);
  const int f = c.unshuffle();
  GPEN_CHECK(a.size % f == 0, "--size must be a multiple of " + std::to_string(f) + " at scale " + std::to_string(a.scale));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<float> in(static_cast<size_t>(a.size) * a.size * 3), out(in.size() * a.scale * a.scale);
  for (float& v : in) v = u(rng);
  m->reserve({{a.size, a.size}});
  for (int i = 0; i < a.warmup; ++i) m->run(in.data(), a.size, a.size, out.data());
  // CPU time besides the wall clock: on a machine shared with other jobs the wall clock measures
  // the scheduler's share as much as the work (docs/benchmarks.md).
  auto cpu_s = [] {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
  };
  const double c0 = cpu_s();
  std::vector<double> ms;
  for (int i = 0; i < a.runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    m->run(in.data(), a.size, a.size, out.data());
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  const double cpu_per_run = (cpu_s() - c0) / a.runs;
  std::sort(ms.begin(), ms.end());
  const double med = ms[ms.size() / 2];
  const double gflop = graph_flops(*m->last_graph()) * 1e-9;
  const int threads = cpu::num_threads();
  nlohmann::json j = {{"model", c.describe()},     {"input", a.size},       {"device", backend->name()},
                      {"threads", threads},         {"median_ms", med},      {"min_ms", ms.front()},
                      {"gflop", gflop},             {"gflops", gflop / (med * 1e-3)},
                      {"cpu_seconds", cpu_per_run},
                      {"arena_bytes", m->arena_bytes()}, {"workspace_bytes", m->workspace_bytes()},
                      {"peak_rss_mib", peak_rss_mib()}};
  if (a.compare_pytorch) {
    nlohmann::json pt = pytorch_bench(a, threads);
    if (pt.contains("seconds")) {
      pt["ms"] = pt["seconds"].get<double>() * 1e3;
      pt["gflops"] = gflop / pt["seconds"].get<double>();
      j["speedup_vs_pytorch"] = pt["ms"].get<double>() / med;
      if (pt.contains("cpu_seconds") && cpu_per_run > 0)
        j["cpu_time_ratio_vs_pytorch"] = pt["cpu_seconds"].get<double>() / cpu_per_run;
    }
    j["pytorch"] = pt;
  }
  if (a.json) {
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::printf("%s on %dx%d -> %dx%d, %s (%d threads), %d runs after %d warm-up\n", c.describe().c_str(), a.size, a.size,
              a.size * a.scale, a.size * a.scale, backend->name(), threads, a.runs, a.warmup);
  std::printf("  engine   %10.1f ms  (%.1f GFLOP, %.1f GFLOP/s; CPU time %.2f s; arena %.0f MiB, peak RSS %.0f MiB)\n",
              med, gflop, gflop / (med * 1e-3), cpu_per_run, double(m->arena_bytes()) / 1048576.0, peak_rss_mib());
  if (j.contains("pytorch")) {
    if (j["pytorch"].contains("ms"))
      std::printf("  PyTorch  %10.1f ms  (%.1f GFLOP/s; CPU time %.2f s)  engine is %.2fx faster (wall), %.2fx (CPU time)\n",
                  j["pytorch"]["ms"].get<double>(), j["pytorch"]["gflops"].get<double>(),
                  j["pytorch"].value("cpu_seconds", 0.0), j["speedup_vs_pytorch"].get<double>(),
                  j.value("cpu_time_ratio_vs_pytorch", 0.0));
    else
      std::printf("  PyTorch  %s\n", j["pytorch"].value("error", std::string("?")).c_str());
  }
}

}  // namespace gpen::cli
