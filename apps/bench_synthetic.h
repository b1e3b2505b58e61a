#pragma once
// What the benches of the official networks share (apps/bench_gfpgan.cpp, bench_transformer.cpp):
// synthetic weights converted to a .gpw outside the bench's process, and the official NCHW outputs
// against the engine's NHWC ones.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine/photo/npy.h"

namespace gpen::cli {

// Runs `convert_to(path)` in a child process, so that the conversion's buffers stay out of the
// bench's peak RSS; `path` is a temporary .gpw named after `tag`, which the caller removes. Throws
// gpen::Error with the child's message when it fails.
std::string write_synthetic_gpw(const std::string& tag, const std::function<void(const std::string&)>& convert_to);

// An official (N, 3, S, S) array against the engine's [N, S, S, 3]: max and mean abs difference
// (max infinite where a difference is NaN). Throws naming `what` on another shape.
std::pair<double, double> nchw_vs_nhwc(const npy::Array& a, const std::vector<float>& nhwc, int N, int S,
                                       const std::string& what);
// The official (N, 3, S, S) input as the engine's [N, S, S, 3].
std::vector<float> nchw_to_nhwc(const npy::Array& a, int N, int S, const std::string& what);

}  // namespace gpen::cli
