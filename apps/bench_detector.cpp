#include "apps/bench_detector.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "apps/bench_detector_profile.h"
#include "apps/bench_device.h"
#include "engine/core/bytes.h"
#include "apps/peer.h"
#include "engine/core/rss.h"
#include "engine/runtime/device.h"
#include "engine/core/error.h"
#include "engine/photo/image.h"
#include "engine/models/retinaface.h"
#include "kernels/cpu/ops.h"

namespace gpen::cli {

void run_detector_bench(const DetectorBenchArgs& a) {
  GPEN_CHECK(!a.detector.empty(), "--arch retinaface needs the detector weights: -d RETINAFACE.gpw");
  GPEN_CHECK(!a.image.empty(), "--arch retinaface needs a photo: --image PHOTO");
  GPEN_CHECK(a.runs >= 1 && a.warmup >= 0, "--runs must be >= 1 and --warmup >= 0");
  GPEN_CHECK(a.onnx_peers.empty() || !a.pytorch_pth.empty(),
             "--compare onnxruntime/openvino with --arch retinaface needs the checkpoint to export: --pytorch-checkpoint X.pth");
  GPEN_CHECK(!a.compare_pytorch || !a.pytorch_pth.empty(),
             "--compare-pytorch with --arch retinaface needs the checkpoint PyTorch loads: --pytorch-checkpoint X.pth");
  DeviceOptions dopt;
  dopt.kind = parse_device(a.device);
  std::unique_ptr<Backend> backend = make_backend(dopt);
  DeviceBackend* dev = dynamic_cast<DeviceBackend*>(backend.get());  // owned by the detector below
  const DeviceBackend::MemoryInfo mem_before = dev ? dev->memory_info() : DeviceBackend::MemoryInfo{};
  RetinaFaceDetector det(a.detector, std::move(backend));
  const Image img = read_image(a.image);
  std::vector<double> ms;
  size_t faces = 0;
  for (int i = 0; i < a.warmup + a.runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    faces = det.detect(img).size();
    if (i >= a.warmup) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  int w = 0, h = 0;
  detect_input_scale(img.width, img.height, DetectOptions{}.max_side, DetectOptions{}.target_side, &w, &h);
  // The network alone, as the ONNX peers are timed: the photo at the network's size (BGR minus
  // GPEN's mean, HWC) through RetinaFaceDetector::run, when no resize is needed.
  std::vector<double> net_ms;
  if (!a.onnx_peers.empty() && w == img.width && h == img.height) {
    std::vector<float> in(img.bgr.size());
    const float mean[3] = {104.0f, 117.0f, 123.0f};
    for (size_t i = 0; i < in.size(); ++i) in[i] = float(img.bgr[i]) - mean[i % 3];
    for (int i = 0; i < a.warmup + a.runs; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      det.run(in.data(), h, w);
      if (i >= a.warmup)
        net_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(net_ms.begin(), net_ms.end());
  }
  nlohmann::json j = {{"detector", a.detector},
                      {"backbone", retinaface_backbone_name(det.backbone())},
                      {"image", a.image},
                      {"width", img.width},
                      {"height", img.height},
                      {"network_input", {{"width", w}, {"height", h}}},
                      {"faces", faces},
                      {"device", det.device()},
                      {"threads", cpu::num_threads()},
                      {"runs", a.runs},
                      {"median_ms", median},
                      {"min_ms", ms.front()},
                      {"max_ms", ms.back()},
                      {"arena_bytes", det.arena_capacity()},
                      {"peak_rss_mib", peak_rss_mib()}};
  if (dev) add_device_memory(j, *dev, mem_before, dev->memory_info());
  if (a.profile) j["profile"] = detector_profile(det, img, a.runs, dev == nullptr);  // after the timed runs
  if (a.compare_pytorch) {
    // The network where the engine's runs (PyTorch has it on the GPU too, pre- and post-processing on the host).
    nlohmann::json peer = run_pytorch_detector_bench(a.pytorch_pth, a.image, a.runs, a.warmup, cpu::num_threads(),
                                                     dev ? "cuda" : "cpu", a.pytorch_timeout);
    j["pytorch"] = peer;
    if (peer.contains("median_ms")) j["speedup_vs_pytorch"] = peer["median_ms"].get<double>() / median;
  }
  // The ONNX peers time the network alone (no pre- or post-processing), on the CPU: the ratios
  // are against the engine's network time where it was measured, else its whole detect().
  double fastest = 0;
  const double engine_net = net_ms.empty() ? median : net_ms[net_ms.size() / 2];
  if (!net_ms.empty()) j["network_median_ms"] = engine_net;
  for (const std::string& name : a.onnx_peers) {
    nlohmann::json r = run_onnx_peer_detector_bench(name, a.pytorch_pth, a.image, a.runs, a.warmup, cpu::num_threads(),
                                                    a.peers_python, a.pytorch_timeout);
    if (r.contains("median_ms")) {
      const double pm = r["median_ms"].get<double>();
      j["vs_peers"][name] = {{"speedup", pm / engine_net}};
      if (fastest == 0 || pm < fastest) fastest = pm;
    }
    j["peers"][name] = std::move(r);
  }
  if (fastest > 0) j["speedup_vs_fastest_peer"] = fastest / engine_net;
  if (a.json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("RetinaFace %s on %s (%d threads), %dx%d photo (network input %dx%d), %zu faces, %d runs after %d warm-up\n",
              retinaface_backbone_name(det.backbone()), det.device(), cpu::num_threads(), img.width, img.height, w, h,
              faces, a.runs, a.warmup);
  std::printf("  time per photo  %.1f ms (median; min %.1f, max %.1f ms)\n", median, ms.front(), ms.back());
  std::printf("  arena %s, peak RSS %.1f MiB\n", human_bytes(double(det.arena_capacity())).c_str(), peak_rss_mib());
  if (dev)
    std::printf("  device          %s; cudaMemGetInfo: %s used\n", dev->device_name().c_str(),
                human_bytes(double(j["device_used_bytes"].get<size_t>())).c_str());
  if (j.contains("pytorch")) {
    const auto& pt = j["pytorch"];
    if (pt.contains("median_ms"))
      std::printf("  PyTorch         %.1f ms per photo (%s, %d threads), peak RSS %.1f MiB%s -> engine is %.2fx faster\n",
                  pt["median_ms"].get<double>(), pt.value("device", std::string("cpu")).c_str(), pt.value("threads", 0),
                  pt.value("peak_rss_mb", 0.0),
                  pt.contains("peak_device_bytes")
                      ? (", peak device " + human_bytes(pt["peak_device_bytes"].get<double>())).c_str()
                      : "",
                  j["speedup_vs_pytorch"].get<double>());
    else
      std::printf("  PyTorch         not measured: %s\n", pt.value("error", std::string("?")).c_str());
  }
  if (j.contains("network_median_ms"))
    std::printf("  network alone   %.1f ms (median), the figure the ONNX peers are compared with\n",
                j["network_median_ms"].get<double>());
  if (j.contains("peers"))
    for (const auto& [name, r] : j["peers"].items()) {
      const char* label = name == "onnxruntime" ? "ONNX Runtime" : "OpenVINO";
      if (!r.contains("median_ms")) {
        std::printf("  %-15s not measured: %s\n", label, r.value("error", std::string("?")).c_str());
        continue;
      }
      std::printf("  %-15s %.1f ms per photo, network only (%s, %d threads), peak RSS %.1f MiB, outputs vs PyTorch "
                  "max abs %.3g -> engine is %.2fx faster\n",
                  label, r["median_ms"].get<double>(), r.value("version", std::string("?")).c_str(), r.value("threads", 0),
                  r.value("peak_rss_mib", 0.0), r.value("max_abs_vs_pytorch", 0.0),
                  j["vs_peers"][name]["speedup"].get<double>());
    }
  if (j.contains("speedup_vs_fastest_peer"))
    std::printf("  vs the faster peer: engine is %.2fx faster\n", j["speedup_vs_fastest_peer"].get<double>());
  if (j.contains("profile")) print_detector_profile(j["profile"], 15);
}

}  // namespace gpen::cli
