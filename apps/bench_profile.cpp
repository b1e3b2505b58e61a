#include "apps/bench_profile.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <cstdio>
#include <map>
#include <string>

#include "engine/core/error.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/env_options.h"
#include "kernels/cpu/conv_select.h"
#include "kernels/cpu/fma_peak.h"
#include "kernels/cpu/isa.h"

namespace gpen::cli {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

nlohmann::json entry(double ms, double total, double flops) {
  return {{"ms", ms},
          {"share", total > 0 ? ms / total : 0.0},
          {"gflop", flops / 1e9},
          {"gflops", ms > 0 ? flops / 1e6 / ms : 0.0}};
}

}  // namespace

nlohmann::json profile_summary(const Graph& g, const std::vector<std::vector<double>>& runs) {
  const auto& nodes = g.nodes();
  GPEN_CHECK(!runs.empty(), "profile: no runs");
  for (const auto& r : runs) GPEN_CHECK(r.size() == nodes.size(), "profile: a run does not time every node");
  std::vector<double> ms(nodes.size());
  double total = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::vector<double> t;
    for (const auto& r : runs) t.push_back(r[i]);
    ms[i] = median(std::move(t));
    total += ms[i];
  }
  std::map<std::string, std::pair<double, double>> by_op;  // op -> (ms, flops)
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    const double f = node_flops(g, n);
    auto& [op_ms, op_f] = by_op[op_name(n.params)];
    op_ms += ms[i];
    op_f += f;
    nlohmann::json e = entry(ms[i], total, f);
    e["node"] = n.name;
    e["op"] = op_name(n.params);
    e["output"] = n.outputs.empty() ? std::string() : g.tensor(n.outputs[0]).shape.str();
    list.push_back(std::move(e));
  }
  auto by_time = [](const nlohmann::json& a, const nlohmann::json& b) { return a["ms"].get<double>() > b["ms"].get<double>(); };
  std::stable_sort(list.begin(), list.end(), by_time);
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& [op, v] : by_op) {
    nlohmann::json e = entry(v.first, total, v.second);
    e["op"] = op;
    ops.push_back(std::move(e));
  }
  std::stable_sort(ops.begin(), ops.end(), by_time);
  return {{"runs", runs.size()}, {"total_ms", total}, {"by_op", ops}, {"nodes", list}};
}

void add_cpu_peak(nlohmann::json& s, const Graph& g, int threads) {
  const cpu::Isa isa = cpu::cpu_isa();
  double mhz = 0;
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; mhz == 0 && std::getline(f, line);)
    if (line.rfind("cpu MHz", 0) == 0 && line.find(':') != std::string::npos) mhz = std::atof(line.c_str() + line.find(':') + 1);
  s["cpu_isa"] = cpu::isa_name(isa);
  // The conv rule and each conv node's path, as the CPU backend plans them (kernels/cpu/conv_select.h).
  s["cpu_conv"] = cpu::conv_mode_name(cpu_options_from_env().conv);
  nlohmann::json rule = nlohmann::json::array();
  const std::string text = cpu::conv_rule_text();
  for (size_t a = 0, b; a < text.size(); a = b + 1) {
    b = text.find('\n', a);
    if (b == std::string::npos) b = text.size();
    rule.push_back(text.substr(a, b - a));
  }
  s["cpu_conv_rule"] = std::move(rule);
  const auto backend = make_cpu_backend();
  std::map<std::string, std::string> path;
  for (const Node& n : g.nodes())
    if (std::holds_alternative<Conv2dParams>(n.params) || std::holds_alternative<ModConvParams>(n.params))
      path[n.name] = cpu::conv_choice_label(backend->plan_node(g, n).conv);
  for (auto& e : s["nodes"])
    if (auto it = path.find(e["node"].get<std::string>()); it != path.end()) e["path"] = it->second;
  // The peak the shares divide by is measured (kernels/cpu/fma_peak.h): the clock /proc/cpuinfo
  // reports is often the base clock, below what the cores sustain. The clock's figure is kept
  // beside it; it stands in only where the measurement fails.
  const double clock_peak = mhz > 0 ? threads * cpu::isa_flops_per_cycle(isa) * mhz * 1e-3 : 0.0;
  const double measured = cpu::measured_fma_peak_gflops(threads);
  if (mhz > 0) s["cpu_mhz"] = mhz, s["clock_peak_gflops"] = clock_peak;
  const double peak = measured > 0 ? measured : clock_peak;
  if (peak <= 0) return;  // nothing to go by: no peak
  s["peak_gflops"] = peak;
  s["peak_source"] = measured > 0 ? "measured" : "clock";
  for (auto& e : s["by_op"]) e["of_peak"] = e["gflops"].get<double>() / peak;
}

std::string describe_peak(const nlohmann::json& s) {
  char buf[256];
  const double peak = s["peak_gflops"].get<double>();
  if (s.value("peak_source", std::string()) == "measured" && s.contains("cpu_mhz"))
    std::snprintf(buf, sizeof buf, "peak %.0f GFLOP/s (measured, FMA chains on every thread; /proc/cpuinfo's %.0f MHz would give %.0f)",
                  peak, s["cpu_mhz"].get<double>(), s["clock_peak_gflops"].get<double>());
  else if (s.value("peak_source", std::string()) == "measured")
    std::snprintf(buf, sizeof buf, "peak %.0f GFLOP/s (measured, FMA chains on every thread)", peak);
  else
    std::snprintf(buf, sizeof buf, "peak %.0f GFLOP/s (from the %.0f MHz of /proc/cpuinfo)", peak, s["cpu_mhz"].get<double>());
  return buf;
}

void print_cpu_conv_rule(const nlohmann::json& s) {
  if (!s.contains("cpu_conv")) return;
  std::printf("    CPU conv rule, GPEN_CPU_CONV=%s (each conv node's path below); GFLOP/s count the direct\n"
              "    conv's FLOPs, so a Winograd conv shows its effective rate (direct FLOPs / time):\n",
              s["cpu_conv"].get<std::string>().c_str());
  for (const auto& line : s.value("cpu_conv_rule", nlohmann::json::array()))
    std::printf("      %s\n", line.get<std::string>().c_str());
}

void print_profile(const nlohmann::json& s, int top) {
  std::printf("  profile (median of %d runs, each node timed alone: %.3f ms in all)\n", s["runs"].get<int>(),
              s["total_ms"].get<double>());
  if (s.contains("peak_gflops"))
    std::printf("    CPU path %s: %s\n", s["cpu_isa"].get<std::string>().c_str(), describe_peak(s).c_str());
  print_cpu_conv_rule(s);
  std::printf("    %-22s %10s %7s %10s %8s\n", "op", "ms", "share", "GFLOP/s", "of peak");
  for (const auto& e : s["by_op"])
    std::printf("    %-22s %10.3f %6.1f%% %10.1f %7.1f%%\n", e["op"].get<std::string>().c_str(), e["ms"].get<double>(),
                100 * e["share"].get<double>(), e["gflops"].get<double>(), 100 * e.value("of_peak", 0.0));
  std::printf("    slowest nodes:\n");
  int k = 0;
  for (const auto& e : s["nodes"]) {
    if (k++ >= top) break;
    std::printf("    %-28s %-14s %-20s %-24s %9.3f ms %6.1f%% %10.1f GFLOP/s\n", e["node"].get<std::string>().c_str(),
                e["op"].get<std::string>().c_str(), e["output"].get<std::string>().c_str(),
                e.value("path", std::string("")).c_str(), e["ms"].get<double>(), 100 * e["share"].get<double>(),
                e["gflops"].get<double>());
  }
}

}  // namespace gpen::cli
