// gpen bench --accuracy and --compare-pytorch: see apps/bench_compare.h.
#include "apps/bench_compare.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "engine/core/bytes.h"
#include "engine/models/gpen_model.h"
#include "engine/photo/output_diff.h"
#include "engine/runtime/device.h"

namespace gpen::cli {

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

std::vector<std::string> parse_peer_list(const std::string& list, bool onnxruntime, bool openvino, bool& pytorch) {
  std::vector<std::string> v;
  auto add = [&v](const std::string& name) {
    if (std::find(v.begin(), v.end(), name) == v.end()) v.push_back(name);
  };
  size_t pos = 0;
  while (!list.empty() && pos <= list.size()) {
    const size_t end = std::min(list.find(',', pos), list.size());
    const std::string name = list.substr(pos, end - pos);
    const auto& known = onnx_peers();
    if (name == "pytorch")
      pytorch = true;
    else if (std::find(known.begin(), known.end(), name) != known.end())
      add(name);
    else
      throw Error("--compare: unknown peer '" + name + "' (known: pytorch, onnxruntime, openvino)");
    pos = end + 1;
  }
  if (onnxruntime) add("onnxruntime");
  if (openvino) add("openvino");
  return v;
}

void compare_onnx_peers(nlohmann::json& j, const PytorchGpenBench& pb, const std::vector<std::string>& peers,
                        const std::string& python) {
  compare_onnx_peers(j, peers, [&](const std::string& name) { return run_onnx_peer_gpen_bench(name, pb, python); });
}

void compare_onnx_peers(nlohmann::json& j, const std::vector<std::string>& peers,
                        const std::function<nlohmann::json(const std::string&)>& run_peer) {
  const double engine_ms = j["ms_per_face"].get<double>();
  double fastest = 0;
  for (const std::string& name : peers) {
    nlohmann::json r = run_peer(name);
    if (r.contains("ms_per_face")) {
      const double ms = r["ms_per_face"].get<double>();
      nlohmann::json v{{"speedup", ms / engine_ms}};
      if (r.contains("peak_rss_mib")) v["rss_ratio"] = r["peak_rss_mib"].get<double>() / j["peak_rss_mib"].get<double>();
      j["vs_peers"][name] = v;
      if (fastest == 0 || ms < fastest) fastest = ms;
    }
    j["peers"][name] = std::move(r);
  }
  if (fastest > 0) j["speedup_vs_fastest_peer"] = fastest / engine_ms;
}

void print_onnx_peers(const nlohmann::json& j) {
  if (!j.contains("peers")) return;
  for (const auto& [name, r] : j["peers"].items()) {
    const std::string label = name == "onnxruntime" ? "ONNX Runtime" : name == "openvino" ? "OpenVINO" : name;
    if (!r.contains("ms_per_face")) {
      std::printf("  %-15s not measured: %s\n", label.c_str(), r.value("error", std::string("?")).c_str());
      continue;
    }
    std::printf("  %-15s %.1f ms per face (%s, %d threads), peak RSS %.1f MiB, output vs PyTorch max abs %.3g "
                "-> engine is %.2fx faster\n",
                label.c_str(), r["ms_per_face"].get<double>(), r.value("version", std::string("?")).c_str(),
                r.value("threads", 0), r.value("peak_rss_mib", 0.0), r.value("max_abs_vs_pytorch", 0.0),
                j["vs_peers"][name]["speedup"].get<double>());
  }
  if (j.contains("speedup_vs_fastest_peer"))
    std::printf("  vs the faster peer: engine is %.2fx faster\n", j["speedup_vs_fastest_peer"].get<double>());
}

}  // namespace gpen::cli
