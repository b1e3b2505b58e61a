#include "apps/bench_detector_profile.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "apps/bench_profile.h"
#include "kernels/cpu/image_resize.h"
#include "kernels/cpu/ops.h"

namespace gpen::cli {

namespace {

bool starts(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// Section of the network from the node's name (engine/models/retinaface_graph.cpp's paths).
std::string section(const std::string& name) {
  if (starts(name, "body.")) return "backbone";
  if (starts(name, "fpn.")) return "fpn";
  if (starts(name, "ssh")) return "ssh";
  if (name.find("Head") != std::string::npos) return "heads";
  return "post";
}

// "backbone conv 3x3 s2", "fpn resize_nearest", ...: the rows of the part table.
std::string part_of(const Graph& g, const Node& n) {
  const std::string sec = section(n.name);
  const auto* c = std::get_if<Conv2dParams>(&n.params);
  if (!c) return sec + " " + op_name(n.params);
  const int64_t cin = g.tensor(n.inputs[0]).shape[3];
  std::string d = sec + " conv " + std::to_string(c->kh) + "x" + std::to_string(c->kw) + " s" + std::to_string(c->stride_h);
  if (c->groups > 1) d += c->groups == cin ? " dw" : " g" + std::to_string(c->groups);
  if (cin <= 4) d += " stem";
  if (c->has_residual) d += " +res";
  return d;
}

}  // namespace

nlohmann::json detector_profile(RetinaFaceDetector& det, const Image& img, int runs, bool on_host) {
  int nw = 0, nh = 0;
  const DetectOptions opt;
  const double ss = detect_input_scale(img.width, img.height, opt.max_side, opt.target_side, &nw, &nh);
  std::vector<float> x(img.pixels() * 3);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(img.bgr[i]);
  if (ss != 1.0) {
    std::vector<float> small(static_cast<size_t>(nw) * static_cast<size_t>(nh) * 3);
    resize_bilinear_f32(x.data(), img.width, img.height, 3, small.data(), nw, nh, ss, ss);
    x.swap(small);
  }
  const float mean[3] = {104.0f, 117.0f, 123.0f};
  for (size_t i = 0; i < x.size(); ++i) x[i] -= mean[i % 3];
  std::vector<std::vector<double>> t;
  for (int i = 0; i < std::max(3, runs); ++i) t.push_back(det.run_profiled(x.data(), nh, nw));
  const Graph& g = det.graph_for(nh, nw);
  nlohmann::json s = profile_summary(g, t);
  if (on_host) add_cpu_peak(s, g, cpu::num_threads());
  std::map<std::string, std::string> part_of_node;
  for (const Node& n : g.nodes()) part_of_node[n.name] = part_of(g, n);
  std::map<std::string, std::pair<double, double>> parts;  // part -> (ms, GFLOP)
  for (auto& e : s["nodes"]) {
    const std::string& part = part_of_node[e["node"].get<std::string>()];
    e["part"] = part;
    parts[part].first += e["ms"].get<double>();
    parts[part].second += e["gflop"].get<double>();
  }
  const double total = s["total_ms"].get<double>();
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [part, v] : parts) {
    nlohmann::json e = {{"part", part},
                        {"ms", v.first},
                        {"share", total > 0 ? v.first / total : 0.0},
                        {"gflop", v.second},
                        {"gflops", v.first > 0 ? v.second * 1e3 / v.first : 0.0}};
    if (s.contains("peak_gflops")) e["of_peak"] = e["gflops"].get<double>() / s["peak_gflops"].get<double>();
    list.push_back(std::move(e));
  }
  std::stable_sort(list.begin(), list.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a["ms"].get<double>() > b["ms"].get<double>();
  });
  s["by_part"] = std::move(list);
  return s;
}

void print_detector_profile(const nlohmann::json& s, int top) {
  std::printf("  profile (median of %d runs, each node timed alone: %.3f ms in all)\n", s["runs"].get<int>(),
              s["total_ms"].get<double>());
  if (s.contains("peak_gflops"))
    std::printf("    CPU path %s: %s\n", s["cpu_isa"].get<std::string>().c_str(), describe_peak(s).c_str());
  print_cpu_conv_rule(s);
  std::printf("    %-22s %10s %7s %10s %8s\n", "op", "ms", "share", "GFLOP/s", "of peak");
  for (const auto& e : s["by_op"])
    std::printf("    %-22s %10.3f %6.1f%% %10.1f %7.1f%%\n", e["op"].get<std::string>().c_str(), e["ms"].get<double>(),
                100 * e["share"].get<double>(), e["gflops"].get<double>(), 100 * e.value("of_peak", 0.0));
  std::printf("    %-34s %10s %7s %8s %10s %8s\n", "part", "ms", "share", "GFLOP", "GFLOP/s", "of peak");
  for (const auto& e : s["by_part"])
    std::printf("    %-34s %10.3f %6.1f%% %8.3f %10.1f %7.1f%%\n", e["part"].get<std::string>().c_str(),
                e["ms"].get<double>(), 100 * e["share"].get<double>(), e["gflop"].get<double>(),
                e["gflops"].get<double>(), 100 * e.value("of_peak", 0.0));
  std::printf("    slowest nodes:\n");
  int k = 0;
  for (const auto& e : s["nodes"]) {
    if (k++ >= top) break;
    std::printf("    %-30s %-10s %-18s %9.3f ms %6.1f%% %8.1f GFLOP/s\n", e["node"].get<std::string>().c_str(),
                e.value("path", std::string("-")).c_str(), e["output"].get<std::string>().c_str(),
                e["ms"].get<double>(), 100 * e["share"].get<double>(), e["gflops"].get<double>());
  }
}

}  // namespace gpen::cli
