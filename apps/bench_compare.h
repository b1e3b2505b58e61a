#pragma once
// gpen bench --accuracy and --compare-pytorch (apps/cmd_bench.cpp): the engine's output against
// the CPU backend in fp32, and the PyTorch reference's runs and the ratios against them, as JSON
// fields and as report lines.
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "apps/peer.h"
#include "engine/models/gpen.h"

namespace gpen::cli {

// --accuracy: `out` (the engine's output for `in`) against the CPU backend in fp32 on the same
// weights (the .gpw, or the synthetic ones of `rc` with the same seed) and input.
void add_accuracy(nlohmann::json& j, const std::optional<std::string>& gpw, const GpenConfig& rc, int batch, int S,
                  const std::vector<float>& in, const std::vector<float>& out);
void print_accuracy(const nlohmann::json& j);

// Speed and memory ratios of the engine against one PyTorch variant (> 1: the engine is faster /
// smaller). Host: the engine's time per face as the caller sees it (input and output copies and
// the host-side dtype conversion included) against PyTorch's synchronised wall time (its input
// already on the device): conservative for the engine. Device: both from CUDA events around the
// launches only. Memory: PyTorch's max_memory_allocated against the engine's planned device bytes
// (weights + arena + workspace).
void add_pytorch_ratios(nlohmann::json& j, const std::string& variant, bool cuda);

// The PyTorch runs of --compare-pytorch on CUDA, by name ("eager_fp16", "compile_fp32", ...).
// Default: eager at the engine's precision (fp16 for the 16-bit types: bf16 costs the same as
// fp16 on tensor cores), eager fp32 when that is another run, torch.compile at the engine's
// precision with --pytorch-compile. "pytorch" holds the first, "speedup_vs_pytorch" its host ratio.
std::vector<std::string> pytorch_variants(const std::string& list, DType precision, bool with_compile);
// Runs the PyTorch variants on CUDA into j["pytorch_variants"] with their ratios; "pytorch" and
// "speedup_vs_pytorch" from the first.
void compare_pytorch_cuda(nlohmann::json& j, PytorchGpenBench pb, const std::vector<std::string>& variants);
void print_pytorch_variant(const nlohmann::json& j, const std::string& name, const nlohmann::json& pt, bool cuda);

// The ONNX peers asked for by --compare LIST (pytorch, onnxruntime, openvino) and the
// --compare-onnxruntime / --compare-openvino flags, in that order, each once; "pytorch" in the
// list sets `pytorch`. Throws on an unknown name.
std::vector<std::string> parse_peer_list(const std::string& list, bool onnxruntime, bool openvino, bool& pytorch);
// Runs each ONNX peer (apps/peer.h) into j["peers"][name], with j["vs_peers"][name] = {"speedup"
// (peer ms per face / engine's), "rss_ratio" (peer process peak RSS / engine's)}, and
// j["speedup_vs_fastest_peer"] over the peers that ran.
// `python` is their interpreter (peers_python()).
void compare_onnx_peers(nlohmann::json& j, const PytorchGpenBench& pb, const std::vector<std::string>& peers,
                        const std::string& python);
// The same for any network: `run_peer(name)` gives the peer's result ({"ms_per_face", ...} or
// {"error"}); the ratios are against j["ms_per_face"] and j["peak_rss_mib"].
void compare_onnx_peers(nlohmann::json& j, const std::vector<std::string>& peers,
                        const std::function<nlohmann::json(const std::string&)>& run_peer);
void print_onnx_peers(const nlohmann::json& j);

}  // namespace gpen::cli
