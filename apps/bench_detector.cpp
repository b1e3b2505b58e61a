#include "apps/bench_detector.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "apps/format.h"
#include "apps/peer.h"
#include "apps/rss.h"
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
  if (dev) {
    const DeviceBackend::MemoryInfo mem_after = dev->memory_info();
    j["device_name"] = dev->device_name();
    j["device_free_before_bytes"] = mem_before.free;
    j["device_free_after_bytes"] = mem_after.free;
    j["device_used_bytes"] = mem_before.free > mem_after.free ? mem_before.free - mem_after.free : 0;
    j["device_total_bytes"] = mem_after.total;
  }
  if (a.compare_pytorch) {
    // The network where the engine's runs (PyTorch has it on the GPU too, pre- and post-processing on the host).
    nlohmann::json peer = run_pytorch_detector_bench(a.pytorch_pth, a.image, a.runs, a.warmup, cpu::num_threads(),
                                                     dev ? "cuda" : "cpu", a.pytorch_timeout);
    j["pytorch"] = peer;
    if (peer.contains("median_ms")) j["speedup_vs_pytorch"] = peer["median_ms"].get<double>() / median;
  }
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
}

}  // namespace gpen::cli
