#include "apps/bench_profile.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <cstdio>
#include <map>
#include <string>

#include "engine/core/error.h"
#include "kernels/cpu/fma_peak.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/winograd.h"
#include "kernels/cpu/winograd_up.h"
#include "kernels/cpu/winograd_s2.h"

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

void add_cpu_peak(nlohmann::json& s, int threads) {
  const cpu::Isa isa = cpu::cpu_isa();
  double mhz = 0;
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; mhz == 0 && std::getline(f, line);)
    if (line.rfind("cpu MHz", 0) == 0 && line.find(':') != std::string::npos) mhz = std::atof(line.c_str() + line.find(':') + 1);
  s["cpu_isa"] = cpu::isa_name(isa);
  s["cpu_conv"] = cpu::winograd_detail::conv_mode_name();
  {  // what the transposed convs run in this mode (the same for every 3x3 one: winograd_up.h)
    ModConvParams up;
    up.up = true;
    const int m = cpu::winograd_detail::winograd_up_tile(up, 1, 256, 256, 256, 64);
    const bool automatic = std::string(cpu::winograd_detail::conv_mode_name()) == "auto";
    s["cpu_conv_up"] = !m          ? std::string("direct")
                       : automatic ? "polyphase Winograd F(4, 2) from 64x64 inputs with 32..256 channels and "
                                     "fused from 16x16 with C >= 256, Co >= 128 (at most 96 tiles), else direct "
                                     "(kernels/cpu/winograd_up.cpp)"
                                   : "polyphase Winograd F(" + std::to_string(m) + ", 2) on every one";
    // ... and the stride-2 conv2ds (winograd_s2.h), asked at GPEN-256's ecd1.
    Conv2dParams s2;
    s2.kh = s2.kw = 3, s2.stride_h = s2.stride_w = 2;
    const int m2 = cpu::winograd_detail::conv2d_wino_s2_tile(s2, Shape{1, 257, 257, 32}, Shape{1, 128, 128, 64});
    s["cpu_conv_s2"] = !m2         ? std::string("direct")
                       : automatic ? "polyphase Winograd F(2x2) from 64x64 outputs with 16..64 input channels (F(4x4) "
                                     "from 256x256 with 32..64), from 32x32 with 65..512 (AVX-512: from 16x16 with "
                                     "129..256), else direct "
                                     "(kernels/cpu/winograd_s2.cpp auto_tile)"
                                   : "polyphase Winograd F(" + std::to_string(m2) + "x" + std::to_string(m2) +
                                         ", 3x3) on every 3x3 stride-2 one with pad 0 or 1";
  }
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

void print_profile(const nlohmann::json& s, int top) {
  std::printf("  profile (median of %d runs, each node timed alone: %.3f ms in all)\n", s["runs"].get<int>(),
              s["total_ms"].get<double>());
  if (s.contains("peak_gflops"))
    std::printf("    CPU path %s: %s\n", s["cpu_isa"].get<std::string>().c_str(), describe_peak(s).c_str());
  if (s.contains("cpu_conv"))
    std::printf("    CPU 3x3 convs: GPEN_CPU_CONV=%s (Winograd where kernels/cpu/winograd.h says); GFLOP/s count the\n"
                "    direct conv's FLOPs, so a Winograd conv shows its effective rate (direct FLOPs / time)\n"
                "    modconv_up (3x3 transposed): %s\n    conv2d (3x3 stride 2): %s\n",
                s["cpu_conv"].get<std::string>().c_str(), s.value("cpu_conv_up", std::string("direct")).c_str(),
                s.value("cpu_conv_s2", std::string("direct")).c_str());
  std::printf("    %-22s %10s %7s %10s %8s\n", "op", "ms", "share", "GFLOP/s", "of peak");
  for (const auto& e : s["by_op"])
    std::printf("    %-22s %10.3f %6.1f%% %10.1f %7.1f%%\n", e["op"].get<std::string>().c_str(), e["ms"].get<double>(),
                100 * e["share"].get<double>(), e["gflops"].get<double>(), 100 * e.value("of_peak", 0.0));
  std::printf("    slowest nodes:\n");
  int k = 0;
  for (const auto& e : s["nodes"]) {
    if (k++ >= top) break;
    std::printf("    %-28s %-14s %-20s %9.3f ms %6.1f%% %10.1f GFLOP/s\n", e["node"].get<std::string>().c_str(),
                e["op"].get<std::string>().c_str(), e["output"].get<std::string>().c_str(), e["ms"].get<double>(),
                100 * e["share"].get<double>(), e["gflops"].get<double>());
  }
}

}  // namespace gpen::cli
