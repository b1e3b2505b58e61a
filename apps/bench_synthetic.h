#pragma once
// What the benches of the official networks share (apps/bench_gfpgan.cpp, bench_transformer.cpp):
// synthetic weights converted to a .gpw outside the bench's process, and the official NCHW outputs
// against the engine's NHWC ones.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "engine/photo/npy.h"
#include "engine/plan/memory_plan.h"

namespace gpen::cli {

// Runs `convert_to(path)` in a child process, so that the conversion's buffers stay out of the
// bench's peak RSS; `path` is a temporary .gpw named after `tag`, which the caller removes. Throws
// gpen::Error with the child's message when it fails.
std::string write_synthetic_gpw(const std::string& tag, const std::function<void(const std::string&)>& convert_to);

// An official (N, 3, S, S) array against the engine's [N, S, S, 3]: max and mean abs difference
// (max infinite where a difference is NaN). Throws naming `what` on another shape.
std::pair<double, double> nchw_vs_nhwc(const npy::Array& a, const std::vector<float>& nhwc, int N, int S,
                                       const std::string& what);
// Two outputs of the same layout: max and mean abs difference (max infinite where one is NaN).
std::pair<double, double> max_mean_abs(const std::vector<float>& a, const std::vector<float>& b);
// The official (N, 3, S, S) input as the engine's [N, S, S, 3].
std::vector<float> nchw_to_nhwc(const npy::Array& a, int N, int S, const std::string& what);
// The bench's input: the export's (`exported["input"]`, when `from_export`), else uniform in
// [-1, 1) from seed 1; [N, S, S, 3].
std::vector<float> bench_input(const nlohmann::json& exported, bool from_export, int N, int S);
// `warmup` untimed then `runs` timed calls of `run` (N faces each, into `out`; host wall time, the
// copies to and from a device included): the figures every official network's bench reports
// (median, min, max, spread, per face, GFLOP, the plan's bytes, peak RSS, the output's non-finite
// values) on `device` (its name).
nlohmann::json time_runs(int runs, int warmup, int N, double flops, const MemoryPlan& plan,
                         const std::function<void()>& run, const std::vector<float>& out, const std::string& device);
// time_runs' figures in words: the time per face and the memory lines (and the device's, when
// add_json gave them).
void print_timing(const nlohmann::json& j);
// One ONNX peer's answer for compare_onnx_peers (apps/bench_compare.h): `run(saved)` times the
// peer, which writes its output to `saved` (a temporary named after `tag` and `name`); that output
// is then compared with the engine's `out`, max_abs_vs_engine (equal work). Without an export
// (`from_export` false) the answer is the export's error.
nlohmann::json peer_vs_engine(const nlohmann::json& exported, bool from_export, const std::string& tag,
                              const std::string& name, const std::function<nlohmann::json(const std::string&)>& run,
                              const std::vector<float>& out, int N, int S);
// gpen::Error naming `what` when time_runs counted non-finite outputs.
void check_finite(const nlohmann::json& j, const std::string& what);

}  // namespace gpen::cli
