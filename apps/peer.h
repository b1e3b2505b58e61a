#pragma once
// Peers measured in the same run as the engine: the PyTorch reference implementation, and ONNX
// Runtime and OpenVINO on an ONNX export of it, each a script of reference_dir(). The PyTorch
// interpreter is $GPEN_PYTHON when set (a GPU machine's python3 with CUDA torch), else
// /usr/bin/python3; the ONNX peers run in an environment of their own, named by `gpen bench
// --peers-python` or $GPEN_PEERS_PYTHON (scripts/peers_venv.sh makes one). Nothing here needs a
// source checkout.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gpen::cli {

// The folder of the reference scripts (tests/reference/*.py, installed as
// PREFIX/share/gpen-engine/reference): $GPEN_REFERENCE_DIR, else that folder of the prefix the
// running binary lives in (PREFIX/bin/gpen), else the one beside it (the build tree: build/gpen,
// build/share/gpen-engine/reference). "" when there is none.
std::string reference_dir();

// The interpreter of the ONNX peers: `flag` (--peers-python) when given, else $GPEN_PEERS_PYTHON.
// Throws gpen::Error, saying how to make one, when neither names an existing file.
std::string peers_python(const std::string& flag);

struct PytorchGpenBench {
  std::string model;  // a .pth is loaded; anything else (a .gpw, empty): random weights of the configuration
  int size = 512, cm = 2;
  double narrow = 1.0;
  int batch = 1, runs = 5, warmup = 1, threads = 1;
  std::string device = "cpu";  // cpu or cuda
  std::string dtype = "fp32";  // fp32, fp16 or bf16 (16-bit on cuda only)
  bool compile = false;        // torch.compile(model); the first warm-up call compiles
  int timeout_s = 0;           // > 0: the script is killed after this many seconds ({"error"})
};

// Runs tests/reference/gpen_reference.py --bench and returns its JSON ({"ms_per_face",
// "peak_rss_mib", ...; on cuda also "device_ms_per_face", "peak_device_bytes", ...}), or
// {"error": why} when PyTorch (or its CUDA device, or torch.compile) is not available.
nlohmann::json run_pytorch_gpen_bench(const PytorchGpenBench& b);

// Runs tests/reference/retinaface_reference.py --bench: detect() on `image` with the official
// checkpoint (.pth), pre- and post-processing included, the network on `device` (cpu or cuda);
// returns {"median_ms", ...} or {"error"}.
nlohmann::json run_pytorch_detector_bench(const std::string& checkpoint_pth, const std::string& image, int runs,
                                          int warmup, int threads, const std::string& device = "cpu",
                                          int timeout_s = 0);

// Runs tests/reference/parsenet_reference.py --bench: ParseNet on a size x size input with
// `threads` torch threads (the checkpoint when given, else random weights: the time does not
// depend on them); returns {"best_ms", "ms": [...], ...} or {"error"}.
nlohmann::json run_pytorch_parsenet_bench(const std::string& checkpoint_pth, int size, int runs, int threads,
                                          int timeout_s = 0);

// The ONNX peers by name: onnxruntime, openvino.
const std::vector<std::string>& onnx_peers();
// Runs tests/reference/peer_bench.py for `peer` on the configuration of `b` (CPU, fp32; b.model,
// device, dtype and compile are not used: random weights as for PyTorch): the export of
// tests/reference/export_gpen_onnx.py, made once into $GPEN_PEERS_CACHE (default
// $XDG_CACHE_HOME/gpen-engine/peers, i.e. ~/.cache/gpen-engine/peers), timed with b.threads threads
// by the interpreter `python` (peers_python()). Returns {"ms_per_face", "peak_rss_mib",
// "max_abs_vs_pytorch", "version", ...} or {"error"}.
nlohmann::json run_onnx_peer_gpen_bench(const std::string& peer, const PytorchGpenBench& b, const std::string& python);

// Runs tests/reference/peer_bench.py --arch retinaface for `peer`: the ONNX export of the
// RetinaFace checkpoint (.pth) for the network input of `image` (export_retinaface_onnx.py,
// cached as for GPEN), the network alone timed with `threads` threads by `python`. Returns {"median_ms",
// "peak_rss_mib", "max_abs_vs_pytorch", "version", ...} or {"error"}.
nlohmann::json run_onnx_peer_detector_bench(const std::string& peer, const std::string& checkpoint_pth,
                                            const std::string& image, int runs, int warmup, int threads,
                                            const std::string& python, int timeout_s = 0);

// GFPGANv1Clean for the ONNX peers and the --accuracy check of `gpen bench --arch gfpgan`: the
// official network's configuration and weights (checkpoint: the .pth the .gpw was converted from;
// empty: the bench's synthetic weights of `seed`, drawn alike on both sides).
struct GfpganPeerConfig {
  std::string checkpoint;
  uint32_t seed = 1;
  int size = 512, style_feat = 512;
  double cm = 2, narrow = 1;
  bool different_w = true, sft_half = true;
  int batch = 1, threads = 1, timeout_s = 0;
};
// Runs tests/reference/export_gfpgan_onnx.py (PyTorch's interpreter, as for GPEN) into the peers'
// cache: returns {"onnx", "input" (N, 3, S, S), "expect" (the official forward on it), ...} or
// {"error"}.
nlohmann::json run_gfpgan_export(const GfpganPeerConfig& c);
// Runs tests/reference/peer_bench.py --arch gfpgan for `peer` on that export with c.threads
// threads by `python`, its output saved to `save_output` (.npy) for the caller to compare. Returns
// {"ms_per_face", "peak_rss_mib", "max_abs_vs_pytorch", "version", ...} or {"error"}.
nlohmann::json run_onnx_peer_gfpgan_bench(const std::string& peer, const nlohmann::json& exported,
                                          const GfpganPeerConfig& c, int runs, int warmup,
                                          const std::string& save_output, const std::string& python);

// CodeFormer and RestoreFormer++ for the ONNX peers and the --accuracy check of `gpen bench --arch
// codeformer|restoreformer`: the released configuration of the official network, its weights the
// checkpoint (the .pth / .ckpt the .gpw was converted from) or, when empty, the bench's synthetic
// ones of `seed` (converter/synthetic_rule.h, drawn alike on both sides).
struct TransformerPeerConfig {
  std::string arch;  // codeformer or restoreformer
  std::string checkpoint;
  uint64_t seed = 1;
  double w = 0.5;  // codeformer: the fidelity the export fixes
  int batch = 1, threads = 1, timeout_s = 0;
};
// Runs tests/reference/export_transformer_onnx.py (PyTorch's interpreter) into the peers' cache:
// returns {"onnx", "input" (N, 3, 512, 512), "expect" (the official forward on it), "expect_indices"
// (N, 256: the codes it picked), ...} or {"error"}.
nlohmann::json run_transformer_export(const TransformerPeerConfig& c);
// Runs tests/reference/peer_bench.py --arch c.arch for `peer` on that export, as
// run_onnx_peer_gfpgan_bench.
nlohmann::json run_onnx_peer_transformer_bench(const std::string& peer, const nlohmann::json& exported,
                                               const TransformerPeerConfig& c, int runs, int warmup,
                                               const std::string& save_output, const std::string& python);

}  // namespace gpen::cli
