#include "apps/bench_transformer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <random>

#include "apps/bench_compare.h"
#include "apps/bench_device.h"
#include "apps/bench_profile.h"
#include "apps/bench_synthetic.h"
#include "apps/peer.h"
#include "converter/convert.h"
#include "converter/layouts.h"
#include "converter/synthetic_rule.h"
#include "engine/core/bytes.h"
#include "engine/core/error.h"
#include "engine/core/rss.h"
#include "engine/models/codeformer.h"
#include "engine/models/f32_network.h"
#include "engine/models/restoreformer.h"
#include "engine/photo/npy.h"
#include "engine/runtime/device.h"
#include "kernels/cpu/ops.h"

namespace gpen::cli {

namespace {

namespace fs = std::filesystem;

constexpr uint64_t kSeed = 1;
constexpr int kSize = 512, kTokens = 256;

// Either network behind one face: its run, its profiled run, its graph and plan.
struct Net {
  std::string name;
  std::function<void(const float*, float*, int32_t*)> run;
  std::function<std::vector<double>(const float*)> run_profiled;
  const Graph* graph = nullptr;
  const MemoryPlan* plan = nullptr;
};

std::string write_synthetic(const std::string& arch) {
  return write_synthetic_gpw(arch, [&arch](const std::string& path) {
    if (arch == "codeformer")
      conv::convert(conv::SyntheticRuleCheckpoint(conv::codeformer_layout(conv::CodeformerConfig{}), kSeed, "CodeFormer"),
                    path);
    else
      conv::convert(
          conv::SyntheticRuleCheckpoint(conv::restoreformer_layout(conv::RestoreformerConfig{}), kSeed, "RestoreFormer++"),
          path);
  });
}

}  // namespace

void run_transformer_bench(const TransformerBenchArgs& a) {
  GPEN_CHECK(a.arch == "codeformer" || a.arch == "restoreformer", "unknown --arch '" + a.arch + "'");
  GPEN_CHECK(a.runs >= 1 && a.warmup >= 0 && a.batch >= 1, "--runs and --batch must be >= 1 and --warmup >= 0");
  GPEN_CHECK(a.w >= 0 && a.w <= 1, "--fidelity must lie in [0, 1]");
  const bool codeformer = a.arch == "codeformer";
  const bool reference = a.accuracy || !a.onnx_peers.empty();
  GPEN_CHECK(!reference || a.model.empty() || !a.pytorch_pth.empty(),
             "--arch " + a.arch + " -m " + a.model + " with --accuracy or the ONNX peers needs --pytorch-checkpoint: "
             "the checkpoint it was converted from (the official network loads it)");
  const int N = a.batch, S = kSize;

  TransformerPeerConfig pc;
  pc.arch = a.arch;
  pc.checkpoint = a.model.empty() ? "" : a.pytorch_pth;
  pc.seed = kSeed;
  pc.w = a.w;
  pc.batch = N;
  pc.threads = cpu::num_threads();
  pc.timeout_s = a.peer_timeout;
  const BenchDevice device(a.device);
  device.refuse_cpu_comparisons(a.arch, !a.onnx_peers.empty() || !a.pytorch_pth.empty());
  // Refused before the synthetic weights are written: 16 bits on the CPU.
  const std::optional<DType> precision = parse_precision_flag(a.precision);
  network_precision(precision, *device.backend, codeformer ? "CodeFormer" : "RestoreFormer");
  // The export first: its input is the one the engine and the peers run.
  const nlohmann::json exported = reference && !device.dev ? run_transformer_export(pc) : nlohmann::json();
  const bool have_ref = exported.contains("onnx");

  std::string gpw = a.model, synthetic;
  if (gpw.empty()) gpw = synthetic = write_synthetic(a.arch);
  Backend& backend = *device.backend;
  std::unique_ptr<CodeformerModel> cf;
  std::unique_ptr<RestoreformerModel> rf;
  // On a device, --accuracy is against the same network on the CPU backend (same weights, input).
  std::unique_ptr<Backend> cpu;
  std::function<void(const float*, float*, int32_t*)> cpu_run;
  try {
    if (codeformer)
      cf = std::make_unique<CodeformerModel>(gpw, backend, precision);
    else
      rf = std::make_unique<RestoreformerModel>(gpw, backend, precision);
    if (device.dev && a.accuracy) {
      cpu = make_cpu_backend();
      const float w = static_cast<float>(a.w);
      if (codeformer)
        cpu_run = [m = std::make_shared<CodeformerModel>(gpw, *cpu), N, w](const float* in, float* out, int32_t* idx) {
          m->run(in, N, w, out, idx);
        };
      else
        cpu_run = [m = std::make_shared<RestoreformerModel>(gpw, *cpu), N](const float* in, float* out, int32_t* idx) {
          m->run(in, N, out, idx);
        };
    }
  } catch (...) {
    if (!synthetic.empty()) fs::remove(synthetic);
    throw;
  }
  if (!synthetic.empty()) fs::remove(synthetic);  // mapped: its pages stay with the model
  Net net;
  const float w = static_cast<float>(a.w);
  if (codeformer) {
    const CodeformerNetConfig& c = cf->config();
    char name[96];
    std::snprintf(name, sizeof name, "CodeFormer 512 (dim_embd %d, %d layers, w %g)", c.dim_embd, c.n_layers, a.w);
    net.name = name;
    net.plan = &cf->plan_for(N, w);
    net.graph = &cf->graph();
    net.run = [&](const float* in, float* out, int32_t* idx) { cf->run(in, N, w, out, idx); };
    net.run_profiled = [&](const float* in) { return cf->run_profiled(in, N, w); };
  } else {
    const RestoreformerNetConfig& c = rf->config();
    net.name = std::string(c.ex_multi_scale_num == 1 ? "RestoreFormer++" : "RestoreFormer") + " 512 (ch " +
               std::to_string(c.ch) + ", " + std::to_string(c.head_size) + " heads)";
    net.plan = &rf->plan_for(N);
    net.graph = &rf->graph();
    net.run = [&](const float* in, float* out, int32_t* idx) { rf->run(in, N, out, idx); };
    net.run_profiled = [&](const float* in) { return rf->run_profiled(in, N); };
  }

  const size_t face = static_cast<size_t>(S) * S * 3;
  const std::vector<float> in = bench_input(exported, have_ref, N, S);
  std::vector<float> out(face * N);
  std::vector<int32_t> codes(static_cast<size_t>(N) * kTokens);
  nlohmann::json j = time_runs(a.runs, a.warmup, N, graph_flops(*net.graph), *net.plan,
                               [&] { net.run(in.data(), out.data(), codes.data()); }, out, backend.name());
  device.add_json(j);
  const char* prec = precision_name(codeformer ? cf->precision() : rf->precision());
  j.update({{"arch", a.arch},
            {"model", a.model.empty() ? "synthetic" : a.model},
            {"model_name", net.name},
            {"size", S},
            {"precision", prec}});
  if (codeformer) j["fidelity_w"] = a.w;
  if (reference && !device.dev) j["export"] = exported;
  if (cpu_run) {
    std::vector<float> expect(out.size());
    std::vector<int32_t> expect_codes(codes.size());
    cpu_run(in.data(), expect.data(), expect_codes.data());
    const auto [mx, mean] = max_mean_abs(out, expect);
    size_t differ = 0;
    for (size_t i = 0; i < codes.size(); ++i) differ += codes[i] != expect_codes[i];
    j["accuracy_reference"] = "the CPU backend, fp32";
    j["accuracy_max_abs"] = mx;
    j["accuracy_mean_abs"] = mean;
    j["accuracy_codes_differing"] = differ;
    j["accuracy_codes"] = codes.size();
  } else if (a.accuracy) {
    if (have_ref) {
      const std::string path = exported["expect"].get<std::string>();
      const auto [mx, mean] = nchw_vs_nhwc(npy::load(path), out, N, S, path);
      j["accuracy_reference"] = "official PyTorch fp32";
      j["accuracy_max_abs"] = mx;
      j["accuracy_mean_abs"] = mean;
      // A code picked apart from the official one changes its whole 32 x 32 patch of the output:
      // the count says whether a large difference is that or the arithmetic.
      if (exported.contains("expect_indices")) {
        const npy::Array idx = npy::load(exported["expect_indices"].get<std::string>());
        GPEN_CHECK(idx.shape == std::vector<int64_t>({N, kTokens}), "the official codes: not (N, 256)");
        const std::vector<float> v = idx.to_f32();
        size_t differ = 0;
        for (size_t i = 0; i < codes.size(); ++i) differ += static_cast<int32_t>(v[i]) != codes[i];
        j["accuracy_codes_differing"] = differ;
        j["accuracy_codes"] = codes.size();
      }
    } else {
      j["accuracy_error"] = exported.value("error", std::string("no export"));
    }
  }
  if (!a.onnx_peers.empty()) {
    compare_onnx_peers(j, a.onnx_peers, [&](const std::string& name) {
      return peer_vs_engine(
          exported, have_ref, a.arch, name,
          [&](const std::string& saved) {
            return run_onnx_peer_transformer_bench(name, exported, pc, a.runs, a.warmup, saved, a.peers_python);
          },
          out, N, S);
    });
  }
  // Last: the per-node runs must not move the timed runs' figures or the peak RSS reported above.
  if (a.profile) {
    std::vector<std::vector<double>> runs;
    for (int i = 0; i < std::max(3, a.runs); ++i) runs.push_back(net.run_profiled(in.data()));
    j["profile"] = profile_summary(*net.graph, runs);
    if (!device.dev) add_cpu_peak(j["profile"], *net.graph, cpu::num_threads());
  }
  if (a.json) {
    std::cout << j.dump(2) << "\n";
  } else {
    const std::string where =
        device.dev ? std::string(backend.name()) : "cpu (" + std::to_string(cpu::num_threads()) + " threads)";
    std::printf("%s, %s weights, on %s, %s, batch %d, %.1f GFLOP per face, %d runs after %d warm-up\n",
                net.name.c_str(), a.model.empty() ? "synthetic" : "converted", where.c_str(), prec, N,
                j["gflop_per_face"].get<double>(), a.runs, a.warmup);
    print_timing(j);
    if (j.contains("accuracy_max_abs")) {
      std::printf("  accuracy        vs %s (same weights, same input): max abs %.3g, mean abs %.3g",
                  device.dev ? "the CPU backend in fp32" : "the official PyTorch forward",
                  j["accuracy_max_abs"].get<double>(), j["accuracy_mean_abs"].get<double>());
      if (j.contains("accuracy_codes_differing"))
        std::printf("; %zu of %zu codes differ", j["accuracy_codes_differing"].get<size_t>(),
                    j["accuracy_codes"].get<size_t>());
      std::printf("\n");
    }
    if (j.contains("accuracy_error"))
      std::printf("  accuracy        not measured: %s\n", j["accuracy_error"].get<std::string>().c_str());
    print_onnx_peers(j);
    if (j.contains("peers"))
      for (const auto& [name, r] : j["peers"].items())
        if (r.contains("max_abs_vs_engine"))
          std::printf("  %s output vs the engine's: max abs %.3g\n", name.c_str(), r["max_abs_vs_engine"].get<double>());
    if (j.contains("profile")) print_profile(j["profile"], 12);
  }
  check_finite(j, net.name);
}

}  // namespace gpen::cli
