// gpen bench: time per face (median and spread after warm-up), peak RSS and the plan's memory
// figures, for a converted model or an architecture with synthetic weights. On CUDA also the
// device time per face (cudaEvent) and the device memory (plan figures, cudaMemGetInfo).
// --accuracy: the same weights and input through the CPU backend in fp32, compared with
// compare_outputs (engine/output_diff.h). --compare-pytorch: the PyTorch reference on the same
// configuration (on CUDA: eager at the engine's precision, eager fp32, torch.compile on request).
// --profile: each node timed alone (apps/bench_profile.h).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "apps/bench_detector.h"
#include "apps/bench_profile.h"
#include "apps/cli.h"
#include "apps/format.h"
#include "apps/peer.h"
#include "apps/rss.h"
#include "engine/device.h"
#include "engine/models/gpen_model.h"
#include "engine/output_diff.h"
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
  bool pytorch_compile = false;  // also torch.compile (CUDA: at the engine's precision)
  int pytorch_timeout = 0;       // seconds per PyTorch run; 0: none
  std::string pytorch_variants;  // CUDA: comma-separated list replacing the default runs
  bool accuracy = false;
  bool profile = false;
  std::string detector, image, pytorch_checkpoint;  // --arch retinaface
};

// --accuracy: `out` (the engine's output for `in`) against the CPU backend in fp32 on the same
// weights (the .gpw, or the synthetic ones of `rc` with the same seed) and input.
void add_accuracy(nlohmann::json& j, const std::optional<std::string>& gpw, const GpenConfig& rc, int batch, int S,
                  const std::vector<float>& in, const std::vector<float>& out) {
  auto cpu = make_cpu_backend();
  std::unique_ptr<GpenModel> r = gpw ? GpenModel::open(*gpw, *cpu, DType::f32) : GpenModel::synthetic(rc, *cpu);
  r->prepare(batch);
  std::vector<float> ref(out.size());
  auto t0 = std::chrono::steady_clock::now();
  r->run(in.data(), ref.data());
  const double ref_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const OutputDiff d = compare_outputs(out.data(), ref.data(), batch, S);
  j["accuracy_reference"] = "cpu fp32";
  j["accuracy_reference_ms"] = ref_ms;
  j["accuracy_values"] = d.values;
  j["accuracy_nonfinite"] = d.nonfinite;
  j["accuracy_max_abs"] = d.max_abs;
  j["accuracy_max_rel"] = d.max_rel;
  // JSON has no infinity: identical 8-bit faces give the string "inf"; NaN (non-finite outputs) null.
  if (std::isinf(d.psnr_8bit))
    j["accuracy_psnr_8bit"] = "inf";
  else
    j["accuracy_psnr_8bit"] = d.psnr_8bit;
  j["accuracy_mse_8bit"] = d.mse_8bit;
  j["accuracy_max_diff_8bit"] = d.max_diff_8bit;
  j["accuracy_differing_8bit"] = d.differing_8bit;
}

void print_accuracy(const nlohmann::json& j) {
  if (j.contains("accuracy_error")) {
    std::printf("  accuracy        not measured: %s\n", j["accuracy_error"].get<std::string>().c_str());
    return;
  }
  if (!j.contains("accuracy_max_abs")) return;
  const auto& psnr = j["accuracy_psnr_8bit"];
  char psnr_s[48] = "n/a (non-finite output)";
  if (psnr.is_number()) std::snprintf(psnr_s, sizeof psnr_s, "%.2f dB", psnr.get<double>());
  if (psnr.is_string()) std::snprintf(psnr_s, sizeof psnr_s, "inf (identical)");
  std::printf("  accuracy        vs CPU fp32 (same weights, same input): max abs %.3g, max rel %.3g, PSNR 8-bit %s; "
              "max %d levels, %zu of %zu values differ",
              j["accuracy_max_abs"].get<double>(), j["accuracy_max_rel"].get<double>(), psnr_s,
              j["accuracy_max_diff_8bit"].get<int>(), j["accuracy_differing_8bit"].get<size_t>(),
              j["accuracy_values"].get<size_t>());
  if (j["accuracy_nonfinite"].get<size_t>() > 0) std::printf(", %zu non-finite", j["accuracy_nonfinite"].get<size_t>());
  std::printf("\n");
}

// Speed and memory ratios of the engine against one PyTorch variant (> 1: the engine is faster /
// smaller). Host: the engine's time per face as the caller sees it (input and output copies and
// the host-side dtype conversion included) against PyTorch's synchronised wall time (its input
// already on the device): conservative for the engine. Device: both from CUDA events around the
// launches only. Memory: PyTorch's max_memory_allocated against the engine's planned device bytes
// (weights + arena + workspace).
void add_pytorch_ratios(nlohmann::json& j, const std::string& variant, bool cuda) {
  const auto& pt = j["pytorch_variants"][variant];
  if (!pt.contains("ms_per_face")) return;
  nlohmann::json r;
  r["speedup_host"] = pt["ms_per_face"].get<double>() / j["ms_per_face"].get<double>();
  if (cuda && pt.contains("device_ms_per_face") && j["device_ms_per_face"].get<double>() > 0)
    r["speedup_device"] = pt["device_ms_per_face"].get<double>() / j["device_ms_per_face"].get<double>();
  if (cuda && pt.contains("peak_device_bytes"))
    r["memory_ratio"] = pt["peak_device_bytes"].get<double>() / double(j["device_planned_bytes"].get<size_t>());
  if (!cuda && pt.contains("peak_rss_mib"))
    r["rss_ratio"] = pt["peak_rss_mib"].get<double>() / j["peak_rss_mib"].get<double>();
  j["vs_pytorch"][variant] = r;
}

// The PyTorch runs of --compare-pytorch on CUDA, by name ("eager_fp16", "compile_fp32", ...).
// Default: eager at the engine's precision (fp16 for the 16-bit types: bf16 costs the same as
// fp16 on tensor cores), eager fp32 when that is another run, torch.compile at the engine's
// precision with --pytorch-compile. "pytorch" holds the first, "speedup_vs_pytorch" its host ratio.
std::vector<std::string> pytorch_variants(const std::string& list, DType precision, bool with_compile) {
  std::vector<std::string> v;
  if (!list.empty()) {
    size_t pos = 0;
    while (pos <= list.size()) {
      const size_t end = std::min(list.find(',', pos), list.size());
      const std::string name = list.substr(pos, end - pos);
      const bool ok = name == "eager_fp32" || name == "eager_fp16" || name == "eager_bf16" || name == "compile_fp32" ||
                      name == "compile_fp16" || name == "compile_bf16";
      GPEN_CHECK(ok, "--pytorch-variants: unknown variant '" + name +
                         "' (known: eager_fp32, eager_fp16, eager_bf16, compile_fp32, compile_fp16, compile_bf16)");
      v.push_back(name);
      pos = end + 1;
    }
    return v;
  }
  const std::string prec = precision == DType::f32 ? "fp32" : "fp16";
  v.push_back("eager_" + prec);
  if (prec != "fp32") v.push_back("eager_fp32");
  if (with_compile) v.push_back("compile_" + prec);
  return v;
}

void compare_pytorch_cuda(nlohmann::json& j, PytorchGpenBench pb, const std::vector<std::string>& variants) {
  pb.device = "cuda";
  for (const std::string& name : variants) {
    const size_t us = name.find('_');
    pb.compile = name.substr(0, us) == "compile";
    pb.dtype = name.substr(us + 1);
    j["pytorch_variants"][name] = run_pytorch_gpen_bench(pb);
    add_pytorch_ratios(j, name, true);
  }
  j["pytorch"] = j["pytorch_variants"][variants.front()];
  if (j["vs_pytorch"].contains(variants.front()))
    j["speedup_vs_pytorch"] = j["vs_pytorch"][variants.front()]["speedup_host"];
}

void print_pytorch_variant(const nlohmann::json& j, const std::string& name, const nlohmann::json& pt, bool cuda) {
  std::string label = "PyTorch " + name;
  std::replace(label.begin(), label.end(), '_', ' ');
  if (!pt.contains("ms_per_face")) {
    std::printf("  %-19s not measured: %s\n", label.c_str(), pt.value("error", std::string("?")).c_str());
    return;
  }
  const auto& r = j["vs_pytorch"][name];
  if (!cuda) {
    std::printf("  %-19s %.1f ms per face%s -> engine is %.2fx faster\n", label.c_str(), pt["ms_per_face"].get<double>(),
                pt.contains("compile_s") ? (" (compile " + std::to_string(int(pt["compile_s"].get<double>())) + " s)").c_str() : "",
                r["speedup_host"].get<double>());
    return;
  }
  std::printf("  %-19s %.3f ms per face (device %.3f ms), peak %s%s -> engine speedup %.2fx (device %.2fx), "
              "memory torch peak / engine planned %.2fx\n",
              label.c_str(), pt["ms_per_face"].get<double>(), pt.value("device_ms_per_face", 0.0),
              human_bytes(pt.value("peak_device_bytes", 0.0)).c_str(),
              pt.contains("compile_s") ? (", compile " + std::to_string(int(pt["compile_s"].get<double>())) + " s").c_str() : "",
              r.value("speedup_host", 0.0), r.value("speedup_device", 0.0), r.value("memory_ratio", 0.0));
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
    d.pytorch_timeout = a.pytorch_timeout;
    GPEN_CHECK(!a.accuracy, "--accuracy is for GPEN (--arch gpen)");
    GPEN_CHECK(!a.profile, "--profile is for GPEN (--arch gpen)");
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
  GPEN_CHECK(a.pytorch_variants.empty() || (dev && a.compare_pytorch),
             "--pytorch-variants is for --compare-pytorch on --device cuda");
  // Checked before the runs: a typo must not cost a GPU run.
  const std::vector<std::string> variants =
      dev && a.compare_pytorch ? pytorch_variants(a.pytorch_variants, precision, a.pytorch_compile)
                               : std::vector<std::string>{};
  std::unique_ptr<GpenModel> m;
  GpenConfig c;  // synthetic weights (without -m)
  if (!a.model.empty()) {
    m = GpenModel::open(a.model, *backend, precision);
  } else {
    GPEN_CHECK(a.arch == "gpen", "unknown --arch '" + a.arch + "' (known: gpen, retinaface)");
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
  const size_t nonfinite = static_cast<size_t>(std::count_if(out.begin(), out.end(), [](float v) { return !std::isfinite(v); }));
  // Without --accuracy a broken output stops here; with it, the figures say how broken first.
  GPEN_CHECK(nonfinite == 0 || a.accuracy, "the generator produced a non-finite value");
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
  if (a.profile) {
    // After the timed runs, so they are not disturbed; each node waits for the one before.
    std::vector<std::vector<double>> runs;
    for (int i = 0; i < std::max(3, a.runs); ++i) runs.push_back(m->run_profiled(in.data()));
    j["profile"] = profile_summary(m->graph(), runs);
  }
  if (a.accuracy) {
    // The reference is built after the engine's runs, so peak_rss_mib above is the engine's own.
    try {
      GpenConfig rc = c;
      rc.act_dtype = DType::f32;
      add_accuracy(j, a.model.empty() ? std::nullopt : std::optional<std::string>(a.model), rc, a.batch, S, in, out);
    } catch (const Error& e) {
      j["accuracy_error"] = e.what();
    }
  }
  if (a.compare_pytorch) {
    PytorchGpenBench pb;
    pb.model = a.model;
    pb.size = S;
    pb.cm = m->config().channel_multiplier;
    pb.narrow = m->config().narrow;
    pb.batch = a.batch;
    pb.runs = a.runs;
    pb.warmup = a.warmup;
    pb.threads = cpu::num_threads();
    pb.timeout_s = a.pytorch_timeout;
    if (!dev) {
      // The CPU peer: eager fp32, as it always was (plus torch.compile on request).
      nlohmann::json peer = run_pytorch_gpen_bench(pb);
      j["pytorch"] = peer;
      if (peer.contains("ms_per_face")) j["speedup_vs_pytorch"] = peer["ms_per_face"].get<double>() / per_face;
      if (a.pytorch_compile) {
        pb.compile = true;
        j["pytorch_variants"]["compile_fp32"] = run_pytorch_gpen_bench(pb);
        add_pytorch_ratios(j, "compile_fp32", false);
      }
    } else {
      compare_pytorch_cuda(j, pb, variants);
    }
  }
  if (a.json) {
    std::cout << j.dump(2) << "\n";
    GPEN_CHECK(nonfinite == 0, "the generator produced " + std::to_string(nonfinite) + " non-finite values");
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
  std::printf("  peak RSS        %.1f MiB\n", j["peak_rss_mib"].get<double>());
  std::printf("  weights         %s, arena %s, workspace %s (lower bound %s)\n", human_bytes(p.weights_bytes).c_str(),
              human_bytes(p.arena_bytes).c_str(), human_bytes(p.workspace_bytes).c_str(),
              human_bytes(p.lower_bound_bytes).c_str());
  print_accuracy(j);
  if (j.contains("profile")) print_profile(j["profile"], 15);
  if (j.contains("pytorch") && !dev) {
    const auto& pt = j["pytorch"];
    if (pt.contains("ms_per_face"))
      std::printf("  PyTorch         %.1f ms per face, peak RSS %.1f MiB -> engine is %.2fx faster\n",
                  pt["ms_per_face"].get<double>(), pt.value("peak_rss_mib", 0.0), j["speedup_vs_pytorch"].get<double>());
    else
      std::printf("  PyTorch         not measured: %s\n", pt.value("error", std::string("?")).c_str());
  }
  if (j.contains("pytorch_variants"))
    for (const char* kind : {"eager_", "compile_"})  // eager first, as they ran
      for (const auto& [name, pt] : j["pytorch_variants"].items())
        if (name.rfind(kind, 0) == 0) print_pytorch_variant(j, name, pt, dev != nullptr);
  GPEN_CHECK(nonfinite == 0, "the generator produced " + std::to_string(nonfinite) + " non-finite values");
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
                   "Also time the PyTorch reference (tests/reference/, or $GPEN_REFERENCE_DIR) on the same "
                   "configuration (needs torch for $GPEN_PYTHON, default /usr/bin/python3); on CUDA: eager at the "
                   "engine's precision (fp16 for fp16/bf16) and eager fp32, with speed and device-memory ratios");
      sub.add_flag("--pytorch-compile", g_args.pytorch_compile,
                   "--compare-pytorch: also time torch.compile of the reference (compile time reported apart)");
      sub.add_option("--pytorch-variants", g_args.pytorch_variants,
                     "--compare-pytorch on CUDA: the PyTorch runs, comma-separated, from eager_fp32, eager_fp16, "
                     "eager_bf16, compile_fp32, compile_fp16, compile_bf16 (default: eager at the engine's precision, "
                     "eager fp32, and compile at the engine's precision with --pytorch-compile)");
      sub.add_option("--pytorch-timeout", g_args.pytorch_timeout,
                     "--compare-pytorch: stop each PyTorch run after this many seconds (0: never)")
          ->capture_default_str();
      sub.add_flag("--accuracy", g_args.accuracy,
                   "Also run the same weights on the same input on the CPU backend in fp32 and report max abs and "
                   "max relative difference of the raw output and the PSNR of the 8-bit faces");
      sub.add_flag("--profile", g_args.profile,
                   "Also time every node alone (CUDA: events, no graph; median of max(3, --runs) runs) and print "
                   "time, share and GFLOP/s per op kind and for the slowest nodes");
      sub.callback([] { run_bench(g_args); });
    },
    60);

}  // namespace
}  // namespace gpen::cli
