// gpen bench: time per face (median and spread after warm-up), peak RSS and the plan's memory
// figures, for a converted model or an architecture with synthetic weights. On CUDA also the
// device time per face (cudaEvent) and the device memory (plan figures, cudaMemGetInfo).
// --accuracy: the same weights and input through the CPU backend in fp32, compared with
// compare_outputs (engine/photo/output_diff.h). --compare-pytorch: the PyTorch reference on the same
// configuration (on CUDA: eager at the engine's precision, eager fp32, torch.compile on request);
// both: apps/bench_compare.h.
// --profile: each node timed alone (apps/bench_profile.h).
// CodeFormer and RestoreFormer++: apps/bench_transformer.h.

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

#include "apps/bench_args.h"
#include "apps/bench_compare.h"
#include "apps/bench_device.h"
#include "apps/bench_detector.h"
#include "apps/bench_gfpgan.h"
#include "apps/bench_parsenet.h"
#include "apps/bench_profile.h"
#include "apps/bench_sr.h"
#include "apps/bench_transformer.h"
#include "kernels/cpu/core_distance.h"
#include "kernels/cpu/isa.h"
#include "apps/cli.h"
#include "engine/core/bytes.h"
#include "apps/peer.h"
#include "reports/plan.h"
#include "engine/core/rss.h"
#include "engine/runtime/device.h"
#include "engine/models/gpen_model.h"
#include "kernels/cpu/ops.h"

namespace gpen::cli {

void run_bench(BenchArgs a) {
  // Checked first: a typo must not cost a run.
  const std::vector<std::string> onnx_list =
      parse_peer_list(a.compare, a.compare_onnxruntime, a.compare_openvino, a.compare_pytorch);
  const std::string peers_py = onnx_list.empty() ? "" : peers_python(a.peers_python);
  GPEN_CHECK(a.save_weights.empty() || (a.arch == "gfpgan" && a.model.empty()),
             "--save-weights keeps the synthetic weights of --arch gfpgan (without -m)");
  if (a.arch == "realesrnet") {
    SrBenchArgs s;
    s.scale = a.sr_scale;
    s.size = a.size;
    s.num_block = a.num_block;
    s.runs = a.runs;
    s.warmup = a.warmup;
    s.device = a.device;
    s.compare_pytorch = a.compare_pytorch;
    s.json = a.json;
    run_sr_bench(s);
    return;
  }
  if (a.arch == "retinaface") {
    DetectorBenchArgs d;
    d.onnx_peers = onnx_list;
    d.peers_python = peers_py;
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
    d.profile = a.profile;
    run_detector_bench(d);
    return;
  }
  if (a.arch == "gfpgan") {
    GPEN_CHECK(!a.compare_pytorch, "--arch gfpgan: the official PyTorch forward is --accuracy (its time is not taken)");
    GPEN_CHECK(!a.profile, "--profile is for GPEN, ParseNet, RetinaFace, CodeFormer and RestoreFormer++");
    GfpganBenchArgs g;
    g.model = a.model;
    g.pytorch_pth = a.pytorch_checkpoint;
    g.size = a.size;
    g.channel_multiplier = a.channel_multiplier;
    g.narrow = a.narrow;
    g.batch = a.batch;
    g.runs = a.runs;
    g.warmup = a.warmup;
    g.json = a.json;
    g.accuracy = a.accuracy;
    g.onnx_peers = onnx_list;
    g.peers_python = peers_py;
    g.peer_timeout = a.pytorch_timeout;
    g.save_weights = a.save_weights;
    g.device = a.device;
    g.precision = a.precision;
    run_gfpgan_bench(g);
    return;
  }
  if (a.arch == "codeformer" || a.arch == "restoreformer") {
    GPEN_CHECK(!a.compare_pytorch, "--arch " + a.arch + ": the official PyTorch forward is --accuracy (its time is not taken)");
    GPEN_CHECK(a.size == 512, "--arch " + a.arch + ": the input is 512 x 512 (--size " + std::to_string(a.size) + ")");
    GPEN_CHECK(a.arch == "codeformer" || a.fidelity == 0.5, "--fidelity is CodeFormer's (--arch codeformer)");
    TransformerBenchArgs t;
    t.arch = a.arch;
    t.model = a.model;
    t.pytorch_pth = a.pytorch_checkpoint;
    t.w = a.fidelity;
    t.batch = a.batch;
    t.runs = a.runs;
    t.warmup = a.warmup;
    t.json = a.json;
    t.accuracy = a.accuracy;
    t.profile = a.profile;
    t.onnx_peers = onnx_list;
    t.peers_python = peers_py;
    t.peer_timeout = a.pytorch_timeout;
    t.device = a.device;
    t.precision = a.precision;
    run_transformer_bench(t);
    return;
  }
  if (a.arch == "parsenet") {
    GPEN_CHECK(onnx_list.empty() && !a.accuracy, "--compare onnxruntime/openvino and --accuracy are for GPEN");
    GPEN_CHECK(a.device == "auto" || a.device == "cpu", "--arch parsenet is timed on the CPU only");
    ParseBenchArgs p;
    p.model = a.model;
    p.pytorch_pth = a.pytorch_checkpoint;
    p.size = a.size;
    p.runs = a.runs;
    p.warmup = a.warmup;
    p.json = a.json;
    p.compare_pytorch = a.compare_pytorch;
    p.profile = a.profile;
    p.pytorch_timeout = a.pytorch_timeout;
    run_parsenet_bench(p);
    return;
  }
  GPEN_CHECK(a.detector.empty() && a.image.empty(), "-d and --image are for --arch retinaface");
  GPEN_CHECK(a.runs >= 1 && a.warmup >= 0, "--runs must be >= 1 and --warmup >= 0");
  DeviceOptions dopt;
  dopt.kind = parse_device(a.device);
  dopt.cuda_graphs = !a.no_cuda_graphs;
  auto backend = make_backend(dopt);
  DeviceBackend* dev = dynamic_cast<DeviceBackend*>(backend.get());
  const DType precision = parse_precision_flag(a.precision).value_or(default_precision(*backend));
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
    GPEN_CHECK(a.weights_dtype.empty() && a.dense_dtype.empty() && a.group_size < 0,
               "--weights-dtype, --dense-dtype and --group-size are for synthetic weights; " + a.model +
                   " keeps the dtype it was converted with (gpen convert --dtype)");
    m = GpenModel::open(a.model, *backend, precision);
  } else {
    GPEN_CHECK(a.arch == "gpen", "unknown --arch '" + a.arch + "' (known: gpen, retinaface, realesrnet, parsenet, gfpgan, codeformer, restoreformer)");
    c.size = a.size;
    c.channel_multiplier = a.channel_multiplier;
    c.narrow = a.narrow;
    c.act_dtype = precision;
    report::apply_weights8_args(c, a.weights_dtype, a.dense_dtype, a.dense_layers, a.group_size);
    m = GpenModel::synthetic(c, *backend);
  }
  m->set_device_timing(dev != nullptr);
  auto t_plan = std::chrono::steady_clock::now();
  PlanOptions popt;
  if (!a.arena_budget.empty()) popt.arena_budget = parse_bytes(a.arena_budget);
  popt.bands = a.bands;
  m->prepare(a.batch, popt);
  double prepare_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_plan).count();
  const int S = m->size();
  const int O = m->output_size();  // > S for FullGenerator_SR
  std::vector<float> in(static_cast<size_t>(a.batch) * S * S * 3), out(static_cast<size_t>(a.batch) * O * O * 3);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> ud(-1.f, 1.f);
  for (auto& v : in) v = ud(rng);
  for (int i = 0; i < a.warmup; ++i) m->run(in.data(), out.data());
  const DeviceBackend::MemoryInfo mem_after = dev ? dev->memory_info() : DeviceBackend::MemoryInfo{};
  std::vector<double> ms, dev_ms, trip_ns;
  int far_runs = 0;
  for (int i = 0; i < a.runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    m->run(in.data(), out.data());
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (dev) dev_ms.push_back(m->last_device_ms());
    // How far apart the CPU threads ran (kernels/cpu/core_distance.h): the figures depend on it.
    if (!dev) {
      far_runs += cpu::cores_far() ? 1 : 0;
      trip_ns.push_back(cpu::last_core_round_trip_ns());
    }
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
                      {"precision", precision_name(precision)},
                      {"weights_dtype", dtype_is_8bit_weight(m->config().quant8) ? dtype_name(m->config().quant8)
                                                                                 : precision_name(precision)},
                      {"cpu_isa", cpu::isa_name(cpu::cpu_isa())}};
  if (!dev && !trip_ns.empty()) {
    std::sort(trip_ns.begin(), trip_ns.end());
    j["cores"] = {{"far_runs", far_runs}, {"round_trip_ns_median", trip_ns[trip_ns.size() / 2]}};
  }
  if (dtype_is_8bit_weight(m->config().quant8)) {
    j["weights_group_size"] = m->config().q8_group;
    j["dense_dtype"] = dtype_is_8bit_weight(m->config().dense8) ? dtype_name(m->config().dense8) : "fp32";
  }
  if (const TransformReport& x = m->transform_report(); x.banding_requested && x.banding.applied)
    j["bands"] = {{"count", x.banding.bands},
                  {"band_resolution", x.banding.band_res},
                  {"kept_resolution", x.banding.keep_res},
                  {"max_band_rows", x.banding.max_band_rows},
                  {"extra_flops_fraction", x.banding.extra_flops_fraction()},
                  {"halos", x.banding.carried ? "carried" : "recomputed"}};
  if (dev) {
    // Device time: the launches of one run, from cudaEvents on the stream (no copies, no host
    // conversion); the host figures above include both.
    const double dmed = dev_ms[dev_ms.size() / 2];
    j["cuda_graphs"] = m->uses_graph();
    j["device_median_ms"] = dmed;
    j["device_min_ms"] = dev_ms.front();
    j["device_ms_per_face"] = dmed / a.batch;
    j["device_weights_bytes"] = m->device_weights_bytes();
    j["device_planned_bytes"] = m->device_weights_bytes() + p.arena_bytes + p.workspace_bytes;
    add_device_memory(j, *dev, mem_before, mem_after);
  }
  if (a.profile) {
    // After the timed runs, so they are not disturbed; each node waits for the one before.
    std::vector<std::vector<double>> runs;
    for (int i = 0; i < std::max(3, a.runs); ++i) runs.push_back(m->run_profiled(in.data()));
    j["profile"] = profile_summary(m->graph(), runs);
    if (!dev) add_cpu_peak(j["profile"], m->graph(), cpu::num_threads());
  }
  if (a.accuracy) {
    // The reference is built after the engine's runs, so peak_rss_mib above is the engine's own.
    try {
      GpenConfig rc = c;
      rc.act_dtype = DType::f32;
      if (O != S) {
        // FullGenerator_SR: the reference model draws its first face's noise, so the engine's output
        // to compare is that of a run restarted at face 0 of the same seed.
        m->set_noise_seed(m->noise_seed());
        m->run(in.data(), out.data());
      }
      rc.quant8 = DType::f32;  // synthetic 8-bit weights: the reference runs their fp32 originals
      const std::string ref = a.accuracy_reference.empty() ? a.model : a.accuracy_reference;
      add_accuracy(j, ref.empty() ? std::nullopt : std::optional<std::string>(ref), rc, a.batch, O, in, out);
      j["accuracy_reference_weights"] = ref.empty() ? std::string("synthetic, fp32") : ref;
    } catch (const Error& e) {
      j["accuracy_error"] = e.what();
    }
  }
  // The configuration every peer runs (the same model shape, batch, runs and threads).
  auto peer_config = [&] {
    PytorchGpenBench pb;
    pb.size = S;
    pb.cm = m->config().channel_multiplier;
    pb.narrow = m->config().narrow;
    pb.batch = a.batch;
    pb.runs = a.runs;
    pb.warmup = a.warmup;
    pb.threads = cpu::num_threads();
    pb.timeout_s = a.pytorch_timeout;
    return pb;
  };
  if (a.compare_pytorch) {
    PytorchGpenBench pb = peer_config();
    pb.model = a.model;
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
  if (!onnx_list.empty()) {
    GPEN_CHECK(!dev, "the ONNX Runtime and OpenVINO peers run on the CPU: use --device cpu");
    compare_onnx_peers(j, peer_config(), onnx_list, peers_py);
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
  if (j.contains("cores") && cpu::num_threads() > 1)
    std::printf("  cores           far apart in %d of %d runs (round trip median %.0f ns; far from %.0f)\n",
                j["cores"]["far_runs"].get<int>(), a.runs, j["cores"]["round_trip_ns_median"].get<double>(),
                cpu::kFarRoundTripNs);
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
  print_onnx_peers(j);
  if (j.contains("pytorch_variants"))
    for (const char* kind : {"eager_", "compile_"})  // eager first, as they ran
      for (const auto& [name, pt] : j["pytorch_variants"].items())
        if (name.rfind(kind, 0) == 0) print_pytorch_variant(j, name, pt, dev != nullptr);
  GPEN_CHECK(nonfinite == 0, "the generator produced " + std::to_string(nonfinite) + " non-finite values");
}

}  // namespace gpen::cli
