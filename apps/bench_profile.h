#pragma once
// gpen bench --profile: where the time of one run goes, node by node and per op kind, with the
// arithmetic rate of each (node_flops / time), so kernel work on a GPU starts from measurements.
#include <nlohmann/json.hpp>
#include <vector>

#include "engine/graph/graph.h"

namespace gpen::cli {

// `runs[r][i]`: milliseconds of node i in profiled run r (Executor::run_profiled). Per node the
// median over the runs; JSON {"runs", "total_ms", "by_op": [...], "nodes": [...]}, both lists
// sorted by time, each entry with ms, share of the total, GFLOP and GFLOP/s.
nlohmann::json profile_summary(const Graph& g, const std::vector<std::vector<double>>& runs);
// CPU runs: the path's peak, threads x FMA flops per cycle of the ISA in use (kernels/cpu/isa.h)
// x the clock /proc/cpuinfo reports ("cpu_isa", "cpu_mhz", "peak_gflops"), and each op's
// fraction of it ("of_peak"), printed with the op table.
void add_cpu_peak(nlohmann::json& summary, int threads);
// The op table and the `top` slowest nodes.
void print_profile(const nlohmann::json& summary, int top);

}  // namespace gpen::cli
