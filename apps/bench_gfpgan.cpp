#include "apps/bench_gfpgan.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "apps/bench_compare.h"
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
  auto backend = make_cpu_backend();
  std::unique_ptr<GfpganModel> net;
  try {
    net = std::make_unique<GfpganModel>(gpw, *backend);
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
  const nlohmann::json exported = reference ? run_gfpgan_export(pc) : nlohmann::json();
  const bool have_ref = exported.contains("onnx");
  const size_t face = static_cast<size_t>(S) * S * 3;
  std::vector<float> in(face * N), out(face * N);
  if (have_ref) {
    const std::string path = exported["input"].get<std::string>();
    in = nchw_to_nhwc(npy::load(path), N, S, path);
  } else {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (float& v : in) v = u(rng);
  }

  const MemoryPlan& p = net->plan_for(N);
  const double flops = graph_flops(net->graph());
  std::vector<double> ms;
  for (int i = 0; i < a.warmup + a.runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    net->run(in.data(), N, out.data());
    if (i >= a.warmup) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2], per_face = median / N;
  const size_t nonfinite = static_cast<size_t>(std::count_if(out.begin(), out.end(), [](float v) { return !std::isfinite(v); }));
  nlohmann::json j = {{"arch", "gfpgan"},
                      {"model", a.model.empty() ? "synthetic" : a.model},
                      {"model_name", "GFPGANv1Clean " + std::to_string(S)},
                      {"size", S},
                      {"channel_multiplier", c.channel_multiplier},
                      {"narrow", c.narrow},
                      {"num_style_feat", c.num_style_feat},
                      {"batch", N},
                      {"device", "cpu"},
                      {"threads", cpu::num_threads()},
                      {"runs", a.runs},
                      {"warmup", a.warmup},
                      {"median_ms", median},
                      {"min_ms", ms.front()},
                      {"max_ms", ms.back()},
                      {"spread_pct", 100.0 * (ms.back() - ms.front()) / median},
                      {"ms_per_face", per_face},
                      {"gflop_per_face", flops / 1e9 / N},
                      {"gflops", flops / 1e9 / (median / 1e3)},
                      {"weights_bytes", p.weights_bytes},
                      {"arena_bytes", p.arena_bytes},
                      {"workspace_bytes", p.workspace_bytes},
                      {"peak_rss_mib", peak_rss_mib()},
                      {"nonfinite", nonfinite}};
  if (reference) j["export"] = exported;
  if (a.accuracy) {
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
    compare_onnx_peers(j, a.onnx_peers, [&](const std::string& name) -> nlohmann::json {
      if (!have_ref) return {{"error", "no ONNX export: " + exported.value("error", std::string("?"))}};
      const std::string saved =
          (fs::temp_directory_path() / ("gpen_bench_gfpgan_" + std::to_string(getpid()) + "_" + name + ".npy")).string();
      nlohmann::json r = run_onnx_peer_gfpgan_bench(name, exported, pc, a.runs, a.warmup, saved, a.peers_python);
      std::error_code ec;
      if (r.contains("ms_per_face") && fs::exists(saved, ec)) {
        // Equal work: the peer's output against the engine's, on the same input.
        r["max_abs_vs_engine"] = nchw_vs_nhwc(npy::load(saved), out, N, S, saved).first;
      }
      fs::remove(saved, ec);
      return r;
    });
  }
  if (a.json) {
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("GFPGANv1Clean %d (channel multiplier %d, narrow %g, %s weights) on cpu (%d threads), batch %d, "
                "%.1f GFLOP per face, %d runs after %d warm-up\n",
                S, c.channel_multiplier, c.narrow, a.model.empty() ? "synthetic" : "converted", cpu::num_threads(), N,
                flops / 1e9 / N, a.runs, a.warmup);
    std::printf("  time per face   %.1f ms (median; batch min %.1f, max %.1f ms), %.1f GFLOP/s\n", per_face,
                ms.front(), ms.back(), j["gflops"].get<double>());
    std::printf("  weights %s, arena %s, workspace %s, peak RSS %.0f MiB\n", human_bytes(double(p.weights_bytes)).c_str(),
                human_bytes(double(p.arena_bytes)).c_str(), human_bytes(double(p.workspace_bytes)).c_str(),
                peak_rss_mib());
    if (j.contains("accuracy_max_abs"))
      std::printf("  accuracy        vs the official PyTorch forward (same weights, same input): max abs %.3g, "
                  "mean abs %.3g\n",
                  j["accuracy_max_abs"].get<double>(), j["accuracy_mean_abs"].get<double>());
    if (j.contains("accuracy_error"))
      std::printf("  accuracy        not measured: %s\n", j["accuracy_error"].get<std::string>().c_str());
    print_onnx_peers(j);
    if (j.contains("peers"))
      for (const auto& [name, r] : j["peers"].items())
        if (r.contains("max_abs_vs_engine"))
          std::printf("  %s output vs the engine's: max abs %.3g\n", name.c_str(), r["max_abs_vs_engine"].get<double>());
  }
  GPEN_CHECK(nonfinite == 0, "GFPGAN produced " + std::to_string(nonfinite) + " non-finite values");
}

}  // namespace gpen::cli
