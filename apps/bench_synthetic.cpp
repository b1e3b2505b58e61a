#include "apps/bench_synthetic.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include "engine/core/bytes.h"
#include "engine/core/error.h"
#include "engine/core/rss.h"
#include "kernels/cpu/ops.h"

namespace gpen::cli {

namespace fs = std::filesystem;

std::string write_synthetic_gpw(const std::string& tag, const std::function<void(const std::string&)>& convert_to) {
  const std::string path =
      (fs::temp_directory_path() / ("gpen_bench_" + tag + "_" + std::to_string(getpid()) + ".gpw")).string();
  int fds[2];
  GPEN_CHECK(pipe(fds) == 0, "gpen bench: cannot create a pipe");
  const pid_t pid = fork();
  GPEN_CHECK(pid >= 0, "gpen bench: cannot fork to write the synthetic weights");
  if (pid == 0) {
    close(fds[0]);
    try {
      convert_to(path);
      _exit(0);
    } catch (const std::exception& e) {
      const ssize_t w = write(fds[1], e.what(), std::strlen(e.what()));
      (void)w;
      _exit(1);
    }
  }
  close(fds[1]);
  std::string msg;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) msg.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::error_code ec;
    fs::remove(path, ec);
    throw Error("synthetic weights for " + path + ": " + (msg.empty() ? "the conversion failed" : msg));
  }
  return path;
}

namespace {

void check_nchw(const npy::Array& a, int N, int S, const std::string& what) {
  GPEN_CHECK(a.shape == std::vector<int64_t>({N, 3, S, S}),
             what + ": expected shape (" + std::to_string(N) + ", 3, " + std::to_string(S) + ", " +
                 std::to_string(S) + ")");
}

}  // namespace

std::pair<double, double> nchw_vs_nhwc(const npy::Array& a, const std::vector<float>& nhwc, int N, int S,
                                       const std::string& what) {
  check_nchw(a, N, S, what);
  const std::vector<float> v = a.to_f32();
  double mx = 0, sum = 0;
  const size_t plane = static_cast<size_t>(S) * S;
  for (size_t b = 0; b < static_cast<size_t>(N); ++b)
    for (size_t ch = 0; ch < 3; ++ch)
      for (size_t p = 0; p < plane; ++p) {
        const double d = std::fabs(double(v[(b * 3 + ch) * plane + p]) - nhwc[(b * plane + p) * 3 + ch]);
        mx = std::isnan(d) ? INFINITY : std::max(mx, d);
        sum += d;
      }
  return {mx, sum / static_cast<double>(v.size())};
}

std::pair<double, double> max_mean_abs(const std::vector<float>& a, const std::vector<float>& b) {
  double mx = 0, sum = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(double(a[i]) - b[i]);
    mx = std::isnan(d) ? INFINITY : std::max(mx, d);
    sum += d;
  }
  return {mx, a.empty() ? 0.0 : sum / static_cast<double>(a.size())};
}

std::vector<float> nchw_to_nhwc(const npy::Array& a, int N, int S, const std::string& what) {
  check_nchw(a, N, S, what);
  const std::vector<float> v = a.to_f32();
  std::vector<float> out(v.size());
  const size_t plane = static_cast<size_t>(S) * S;
  for (size_t b = 0; b < static_cast<size_t>(N); ++b)
    for (size_t ch = 0; ch < 3; ++ch)
      for (size_t p = 0; p < plane; ++p) out[(b * plane + p) * 3 + ch] = v[(b * 3 + ch) * plane + p];
  return out;
}

std::vector<float> bench_input(const nlohmann::json& exported, bool from_export, int N, int S) {
  if (from_export) {
    const std::string path = exported["input"].get<std::string>();
    return nchw_to_nhwc(npy::load(path), N, S, path);
  }
  std::vector<float> in(static_cast<size_t>(N) * S * S * 3);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& v : in) v = u(rng);
  return in;
}

nlohmann::json time_runs(int runs, int warmup, int N, double flops, const MemoryPlan& plan,
                         const std::function<void()>& run, const std::vector<float>& out, const std::string& device) {
  std::vector<double> ms;
  for (int i = 0; i < warmup + runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    run();
    if (i >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  const size_t nonfinite = static_cast<size_t>(std::count_if(out.begin(), out.end(), [](float v) { return !std::isfinite(v); }));
  return {{"batch", N},
          {"device", device},
          {"threads", cpu::num_threads()},
          {"runs", runs},
          {"warmup", warmup},
          {"median_ms", median},
          {"min_ms", ms.front()},
          {"max_ms", ms.back()},
          {"spread_pct", 100.0 * (ms.back() - ms.front()) / median},
          {"ms_per_face", median / N},
          {"gflop_per_face", flops / 1e9 / N},
          {"gflops", flops / 1e9 / (median / 1e3)},
          {"weights_bytes", plan.weights_bytes},
          {"arena_bytes", plan.arena_bytes},
          {"workspace_bytes", plan.workspace_bytes},
          {"peak_rss_mib", peak_rss_mib()},
          {"nonfinite", nonfinite}};
}

void print_timing(const nlohmann::json& j) {
  std::printf("  time per face   %.1f ms (median; batch min %.1f, max %.1f ms), %.1f GFLOP/s\n",
              j["ms_per_face"].get<double>(), j["min_ms"].get<double>(), j["max_ms"].get<double>(),
              j["gflops"].get<double>());
  std::printf("  weights %s, arena %s, workspace %s, peak RSS %.0f MiB\n",
              human_bytes(j["weights_bytes"].get<double>()).c_str(), human_bytes(j["arena_bytes"].get<double>()).c_str(),
              human_bytes(j["workspace_bytes"].get<double>()).c_str(), j["peak_rss_mib"].get<double>());
  if (j.contains("device_name"))
    std::printf("  device          %s; cudaMemGetInfo: %s used\n", j["device_name"].get<std::string>().c_str(),
                human_bytes(j["device_used_bytes"].get<double>()).c_str());
}

nlohmann::json peer_vs_engine(const nlohmann::json& exported, bool from_export, const std::string& tag,
                              const std::string& name, const std::function<nlohmann::json(const std::string&)>& run,
                              const std::vector<float>& out, int N, int S) {
  if (!from_export) return {{"error", "no ONNX export: " + exported.value("error", std::string("?"))}};
  const std::string saved =
      (fs::temp_directory_path() / ("gpen_bench_" + tag + "_" + std::to_string(getpid()) + "_" + name + ".npy")).string();
  nlohmann::json r = run(saved);
  std::error_code ec;
  if (r.contains("ms_per_face") && fs::exists(saved, ec))
    r["max_abs_vs_engine"] = nchw_vs_nhwc(npy::load(saved), out, N, S, saved).first;
  fs::remove(saved, ec);
  return r;
}

void check_finite(const nlohmann::json& j, const std::string& what) {
  const size_t n = j["nonfinite"].get<size_t>();
  GPEN_CHECK(n == 0, what + " produced " + std::to_string(n) + " non-finite values");
}

}  // namespace gpen::cli
