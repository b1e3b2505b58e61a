#include "apps/bench_gfpgan.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <random>

#include "apps/bench_compare.h"
#include "apps/bench_device.h"
#include "apps/bench_synthetic.h"
#include "apps/peer.h"
#include "converter/checkpoint.h"
#include "converter/convert.h"
#include "converter/layouts.h"
#include "converter/synthetic_gfpgan.h"
#include "engine/core/bytes.h"
#include "engine/core/error.h"
#include "engine/core/rss.h"
#include "engine/models/gfpgan.h"
#include "engine/photo/npy.h"
#include "engine/runtime/device.h"
#include "kernels/cpu/ops.h"

namespace gpen::cli {

namespace {

namespace fs = std::filesystem;

constexpr uint32_t kSeed = 1;

}  // namespace

void run_gfpgan_bench(const GfpganBenchArgs& a) {
  GPEN_CHECK(a.runs >= 1 && a.warmup >= 0, "--runs must be >= 1 and --warmup >= 0");
  const bool reference = a.accuracy || !a.onnx_peers.empty();
  GPEN_CHECK(!reference || a.model.empty() || !a.pytorch_pth.empty(),
             "--arch gfpgan -m " + a.model + " with --accuracy or the ONNX peers needs --pytorch-checkpoint: the "
             ".pth it was converted from (the official network loads it)");
  std::string gpw = a.model, synthetic;
  if (gpw.empty()) {
    conv::GfpganConfig gc;
    gc.out_size = a.size;
    gc.channel_multiplier = a.channel_multiplier;
    gc.narrow = a.narrow;
    gc.check();
    gpw = synthetic = write_synthetic_gpw(
        "gfpgan", [&gc](const std::string& path) { conv::convert(conv::SyntheticGfpganCheckpoint(gc, kSeed), path); });
    if (!a.save_weights.empty()) fs::copy_file(synthetic, a.save_weights, fs::copy_options::overwrite_existing);
  }
  const std::optional<DType> precision = parse_precision_flag(a.precision);
  std::unique_ptr<BenchDevice> device;
  std::unique_ptr<GfpganModel> net;
  // On a device, --accuracy is against the CPU backend on the same weights and input, as GPEN's.
  std::unique_ptr<Backend> cpu;
  std::unique_ptr<GfpganModel> cpu_net;
  try {
    device = std::make_unique<BenchDevice>(a.device);
    device->refuse_cpu_comparisons("gfpgan", !a.onnx_peers.empty() || !a.pytorch_pth.empty());
    net = std::make_unique<GfpganModel>(gpw, *device->backend, precision);
    if (device->dev && a.accuracy) cpu_net = std::make_unique<GfpganModel>(gpw, *(cpu = make_cpu_backend()));
  } catch (...) {
    if (!synthetic.empty()) fs::remove(synthetic);
    throw;
  }
  if (!synthetic.empty()) fs::remove(synthetic);  // mapped: its pages stay with the model
  GfpganNetConfig c = net->config();
  c.batch = a.batch;
  c.check();
  const int S = c.out_size, N = c.batch;
  // Below 64 the channel multiplier changes no shape, so the .gpw cannot tell it: report the one asked for.
  if (a.model.empty()) c.channel_multiplier = a.channel_multiplier;

  GfpganPeerConfig pc;
  pc.checkpoint = a.model.empty() ? "" : a.pytorch_pth;
  pc.seed = kSeed;
  pc.size = S;
  pc.style_feat = c.num_style_feat;
  pc.cm = c.channel_multiplier;
  pc.narrow = c.narrow;
  pc.different_w = c.different_w;
  pc.sft_half = c.sft_half;
  pc.batch = N;
  pc.threads = cpu::num_threads();
  pc.timeout_s = a.peer_timeout;
  // The export first: its input is the one the engine and the peers run.
  const nlohmann::json exported = reference && !device->dev ? run_gfpgan_export(pc) : nlohmann::json();
  const bool have_ref = exported.contains("onnx");
  const size_t face = static_cast<size_t>(S) * S * 3;
  const std::vector<float> in = bench_input(exported, have_ref, N, S);
  std::vector<float> out(face * N);
  nlohmann::json j = time_runs(a.runs, a.warmup, N, graph_flops(net->graph()), net->plan_for(N),
                               [&] { net->run(in.data(), N, out.data()); }, out, device->backend->name());
  device->add_json(j);
  j.update({{"arch", "gfpgan"},
            {"model", a.model.empty() ? "synthetic" : a.model},
            {"model_name", "GFPGANv1Clean " + std::to_string(S)},
            {"size", S},
            {"precision", precision_name(net->precision())},
            {"channel_multiplier", c.channel_multiplier},
            {"narrow", c.narrow},
            {"num_style_feat", c.num_style_feat}});
  if (reference && !device->dev) j["export"] = exported;
  if (cpu_net) {
    std::vector<float> expect(out.size());
    cpu_net->run(in.data(), N, expect.data());
    const auto [mx, mean] = max_mean_abs(out, expect);
    j["accuracy_reference"] = "the CPU backend, fp32";
    j["accuracy_max_abs"] = mx;
    j["accuracy_mean_abs"] = mean;
  } else if (a.accuracy) {
    if (have_ref) {
      const std::string path = exported["expect"].get<std::string>();
      const auto [mx, mean] = nchw_vs_nhwc(npy::load(path), out, N, S, path);
      j["accuracy_reference"] = "official PyTorch fp32";
      j["accuracy_max_abs"] = mx;
      j["accuracy_mean_abs"] = mean;
    } else {
      j["accuracy_error"] = exported.value("error", std::string("no export"));
    }
  }
  if (!a.onnx_peers.empty()) {
    compare_onnx_peers(j, a.onnx_peers, [&](const std::string& name) {
      return peer_vs_engine(
          exported, have_ref, "gfpgan", name,
          [&](const std::string& saved) {
            return run_onnx_peer_gfpgan_bench(name, exported, pc, a.runs, a.warmup, saved, a.peers_python);
          },
          out, N, S);
    });
  }
  if (a.json) {
    std::cout << j.dump(2) << "\n";
  } else {
    const std::string where = device->dev ? std::string(device->backend->name())
                                          : "cpu (" + std::to_string(cpu::num_threads()) + " threads)";
    std::printf("GFPGANv1Clean %d (channel multiplier %d, narrow %g, %s weights) on %s, %s, batch %d, "
                "%.1f GFLOP per face, %d runs after %d warm-up\n",
                S, c.channel_multiplier, c.narrow, a.model.empty() ? "synthetic" : "converted", where.c_str(),
                precision_name(net->precision()), N,
                j["gflop_per_face"].get<double>(), a.runs, a.warmup);
    print_timing(j);
    if (j.contains("accuracy_max_abs"))
      std::printf("  accuracy        vs %s (same weights, same input): max abs %.3g, mean abs %.3g\n",
                  device->dev ? "the CPU backend in fp32" : "the official PyTorch forward",
                  j["accuracy_max_abs"].get<double>(), j["accuracy_mean_abs"].get<double>());
    if (j.contains("accuracy_error"))
      std::printf("  accuracy        not measured: %s\n", j["accuracy_error"].get<std::string>().c_str());
    print_onnx_peers(j);
    if (j.contains("peers"))
      for (const auto& [name, r] : j["peers"].items())
        if (r.contains("max_abs_vs_engine"))
          std::printf("  %s output vs the engine's: max abs %.3g\n", name.c_str(), r["max_abs_vs_engine"].get<double>());
  }
  check_finite(j, "GFPGAN");
}

}  // namespace gpen::cli
