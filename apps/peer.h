#pragma once
// Peers measured in the same run as the engine: the PyTorch reference implementation.
#include <nlohmann/json.hpp>
#include <string>

namespace gpen::cli {

// Runs tests/reference/gpen_reference.py --bench with the same checkpoint (or a random one of the
// same configuration) on `threads` torch threads and returns its JSON ({"ms_per_face",
// "peak_rss_mib", ...}), or
// {"error": why} when PyTorch is not available.
nlohmann::json run_pytorch_gpen_bench(const std::string& checkpoint_or_gpw, int size, int cm, double narrow, int batch,
                                      int runs, int warmup, int threads);

// Runs tests/reference/retinaface_reference.py --bench: detect() on `image` with the official
// checkpoint (.pth), pre- and post-processing included; returns {"median_ms", ...} or {"error"}.
nlohmann::json run_pytorch_detector_bench(const std::string& checkpoint_pth, const std::string& image, int runs,
                                          int warmup, int threads);

}  // namespace gpen::cli
