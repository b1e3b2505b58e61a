// gpen bench: time per face (median and spread after warm-up), peak RSS and the plan's memory
// figures, for a converted model or an architecture with synthetic weights. On CUDA also the
// device time per face (cudaEvent) and the device memory (plan figures, cudaMemGetInfo).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <cmath>
#include <random>

#include "apps/bench_detector.h"
#include "apps/cli.h"
#include "apps/format.h"
#include "apps/peer.h"
#include "engine/device.h"
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
  std::string device = "auto";
  std::string precision;  // empty: fp32 on the CPU, fp16 on CUDA
  bool no_cuda_graphs = false;
  bool json = false;
  bool compare_pytorch = false;
  std::string detector, image, pytorch_checkpoint;  // --arch retinaface
};

double peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
}

void run_bench(const BenchArgs& a) {
  if (a.arch == "retinaface") {
    DetectorBenchArgs d;
    d.detector = a.detector;
    d.image = a.image;
    d.pytorch_pth = a.pytorch_checkpoint;
    d.device = a.device;
    d.runs = a.runs;
    d.warmup = a.warmup;
    d.json = a.json;
    d.compare_pytorch = a.compare_pytorch;
    run_detector_bench(d);
    return;
  }
  GPEN_CHECK(a.detector.empty() && a.image.empty(), "-d and --image are for --arch retinaface");
  GPEN_CHECK(a.runs >= 1 && a.warmup >= 0, "--runs must be >= 1 and --warmup >= 0");
  DeviceOptions dopt;
  dopt.kind = parse_device(a.device);
  dopt.cuda_graphs = !a.no_cuda_graphs;
  auto backend = make_backend(dopt);
  DeviceBackend* dev = dynamic_cast<DeviceBackend*>(backend.get());
  const DType precision = a.precision.empty() ? default_precision(*backend) : parse_precision(a.precision);
  const DeviceBackend::MemoryInfo mem_before = dev ? dev->memory_info() : DeviceBackend::MemoryInfo{};
  std::unique_ptr<GpenModel> m;
  if (!a.model.empty()) {
    m = GpenModel::open(a.model, *backend, precision);
  } else {
    GPEN_CHECK(a.arch == "gpen", "unknown --arch '" + a.arch + "' (known: gpen, retinaface)");
    GpenConfig c;
    c.size = a.size;
    c.channel_multiplier = a.channel_multiplier;
    c.narrow = a.narrow;
    c.act_dtype = precision;
    m = GpenModel::synthetic(c, *backend);
  }
  m->set_device_timing(dev != nullptr);
  auto t_plan = std::chrono::steady_clock::now();
  m->prepare(a.batch);
  double prepare_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_plan).count();
  const int S = m->size();
  std::vector<float> in(static_cast<size_t>(a.batch) * S * S * 3), out(in.size());
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> ud(-1.f, 1.f);
  for (auto& v : in) v = ud(rng);
  for (int i = 0; i < a.warmup; ++i) m->run(in.data(), out.data());
  const DeviceBackend::MemoryInfo mem_after = dev ? dev->memory_info() : DeviceBackend::MemoryInfo{};
  std::vector<double> ms, dev_ms;
  for (int i = 0; i < a.runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    m->run(in.data(), out.data());
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (dev) dev_ms.push_back(m->last_device_ms());
  }
  std::sort(ms.begin(), ms.end());
  std::sort(dev_ms.begin(), dev_ms.end());
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
                      {"lower_bound_bytes", p.lower_bound_bytes},
                      {"precision", precision_name(precision)}};
  if (dev) {
    // Device time: the launches of one run, from cudaEvents on the stream (no copies, no host
    // conversion); the host figures above include both.
    const double dmed = dev_ms[dev_ms.size() / 2];
    j["device_name"] = dev->device_name();
    j["cuda_graphs"] = m->uses_graph();
    j["device_median_ms"] = dmed;
    j["device_min_ms"] = dev_ms.front();
    j["device_ms_per_face"] = dmed / a.batch;
    j["device_weights_bytes"] = m->device_weights_bytes();
    j["device_planned_bytes"] = m->device_weights_bytes() + p.arena_bytes + p.workspace_bytes;
    j["device_free_before_bytes"] = mem_before.free;
    j["device_free_after_bytes"] = mem_after.free;
    j["device_used_bytes"] = mem_before.free > mem_after.free ? mem_before.free - mem_after.free : 0;
    j["device_total_bytes"] = mem_after.total;
  }
  if (a.compare_pytorch) {
    nlohmann::json peer = run_pytorch_gpen_bench(a.model, S, m->config().channel_multiplier, m->config().narrow,
                                                 a.batch, a.runs, a.warmup, cpu::num_threads());
    j["pytorch"] = peer;
    if (peer.contains("ms_per_face")) j["speedup_vs_pytorch"] = peer["ms_per_face"].get<double>() / per_face;
  }
  if (a.json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  if (dev)
    std::printf("%s on %s (%s, CUDA graphs %s), batch %d, %d runs after %d warm-up\n",
                m->config().describe().c_str(), backend->name(), dev->device_name().c_str(),
                m->uses_graph() ? "on" : "off", a.batch, a.runs, a.warmup);
  else
    std::printf("%s on %s (%d threads), batch %d, %d runs after %d warm-up\n", m->config().describe().c_str(),
                backend->name(), cpu::num_threads(), a.batch, a.runs, a.warmup);
  std::printf("  time per face   %.2f ms (median; batch min %.1f, max %.1f ms)\n", per_face, ms.front(), ms.back());
  if (dev) {
    std::printf("  device time     %.3f ms per face (cudaEvent, median of the launches; batch min %.2f ms)\n",
                j["device_ms_per_face"].get<double>(), dev_ms.front());
    std::printf("  device memory   planned %s (weights %s + arena %s + workspace %s); cudaMemGetInfo: %s used, "
                "%s free of %s\n",
                human_bytes(double(j["device_planned_bytes"].get<size_t>())).c_str(),
                human_bytes(double(m->device_weights_bytes())).c_str(), human_bytes(double(p.arena_bytes)).c_str(),
                human_bytes(double(p.workspace_bytes)).c_str(),
                human_bytes(double(j["device_used_bytes"].get<size_t>())).c_str(),
                human_bytes(double(mem_after.free)).c_str(), human_bytes(double(mem_after.total)).c_str());
  }
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
    "bench", "Time GPEN per face (or RetinaFace per photo), peak RSS and planned memory (optionally against PyTorch)",
    [](CLI::App& sub) {
      sub.add_option("-m,--model", g_args.model, "Converted GPEN model (.gpw); without it, synthetic weights");
      sub.add_option("--arch", g_args.arch,
                     "gpen (synthetic weights unless -m), or retinaface: time detect() on --image with -d")
          ->capture_default_str();
      sub.add_option("-d,--detector", g_args.detector, "--arch retinaface: RetinaFace weights (.gpw)");
      sub.add_option("--image", g_args.image, "--arch retinaface: the photo to detect faces in");
      sub.add_option("--pytorch-checkpoint", g_args.pytorch_checkpoint,
                     "--arch retinaface --compare-pytorch: the .pth the PyTorch reference loads");
      sub.add_option("--size", g_args.size, "GPEN resolution for synthetic weights")->capture_default_str();
      sub.add_option("--channel-multiplier", g_args.channel_multiplier, "GPEN channel multiplier")->capture_default_str();
      sub.add_option("--narrow", g_args.narrow, "GPEN narrow factor")->capture_default_str();
      sub.add_option("--batch", g_args.batch, "Faces per run")->capture_default_str()->check(CLI::PositiveNumber);
      sub.add_option("--runs", g_args.runs, "Timed runs")->capture_default_str();
      sub.add_option("--warmup", g_args.warmup, "Untimed runs first")->capture_default_str();
      sub.add_option("--device", g_args.device, "cpu, cuda or auto (CUDA when a GPU is present)")->capture_default_str();
      sub.add_option("--precision", g_args.precision, "fp32, fp16 or bf16 (default: fp32 on the CPU, fp16 on CUDA)");
      sub.add_flag("--no-cuda-graphs", g_args.no_cuda_graphs, "CUDA: launch every kernel each run instead of replaying a captured graph");
      sub.add_flag("--json", g_args.json, "Print JSON");
      sub.add_flag("--compare-pytorch", g_args.compare_pytorch,
                   "Also time the PyTorch reference (tests/reference/) on the same configuration (needs python3-torch)");
      sub.callback([] { run_bench(g_args); });
    },
    60);

}  // namespace
}  // namespace gpen::cli
