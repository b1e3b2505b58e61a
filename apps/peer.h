#pragma once
// Peers measured in the same run as the engine: the PyTorch reference implementation.
#include <nlohmann/json.hpp>
#include <string>

namespace gpen::cli {

// Runs tests/reference/gpen_reference.py --bench with the same checkpoint (or a random one of the
// same configuration) and returns its JSON ({"ms_per_face", "peak_rss_mib", ...}), or
// {"error": why} when PyTorch is not available.
nlohmann::json run_pytorch_gpen_bench(const std::string& checkpoint_or_gpw, int size, int cm, double narrow, int batch,
                                      int runs, int warmup);

}  // namespace gpen::cli
