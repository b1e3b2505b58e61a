#pragma once
// gpen bench --profile: where the time of one run goes, node by node and per op kind, with the
// arithmetic rate of each (node_flops / time), so kernel work on a GPU starts from measurements.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/graph/graph.h"

namespace gpen::cli {

// `runs[r][i]`: milliseconds of node i in profiled run r (Executor::run_profiled). Per node the
// median over the runs; JSON {"runs", "total_ms", "by_op": [...], "nodes": [...]}, both lists
// sorted by time, each entry with ms, share of the total, GFLOP and GFLOP/s.
nlohmann::json profile_summary(const Graph& g, const std::vector<std::vector<double>>& runs);
// CPU runs: the path's peak, measured on `threads` threads (kernels/cpu/fma_peak.h; "peak_gflops",
// "peak_source": "measured"), with threads x FMA flops per cycle of the ISA (kernels/cpu/isa.h) x
// the clock /proc/cpuinfo reports beside it ("cpu_mhz", "clock_peak_gflops"; the peak itself,
// "peak_source": "clock", where the measurement fails), and each op's fraction of the peak
// ("of_peak"), printed with the op table; and the CPU conv rule from the code ("cpu_conv": the
// GPEN_CPU_CONV mode, "cpu_conv_rule": kernels/cpu/conv_select.h's table, one line each) with each
// conv node's path as the CPU backend plans it ("path").
void add_cpu_peak(nlohmann::json& summary, const Graph& g, int threads);
// "peak N GFLOP/s (measured ...)" for a summary holding peak_gflops.
std::string describe_peak(const nlohmann::json& summary);
// The CPU conv rule of a summary holding one (add_cpu_peak).
void print_cpu_conv_rule(const nlohmann::json& summary);
// The CPU conv rule, the op table and the `top` slowest nodes.
void print_profile(const nlohmann::json& summary, int top);

}  // namespace gpen::cli
