#pragma once
// The options of `gpen bench` (apps/cmd_bench.cpp registers them) and the run they drive
// (apps/bench_gpen.cpp; the other architectures hand off to apps/bench_detector, bench_parsenet,
// bench_sr, bench_gfpgan and bench_transformer).
#include <string>

namespace gpen::cli {

struct BenchArgs {
  std::string model;
  std::string arch = "gpen";
  int size = 512;
  int channel_multiplier = 2;
  double narrow = 1.0;
  int batch = 1;
  std::string arena_budget;  // banded execution (engine/plan/banding.h)
  int bands = 0;
  int runs = 5;
  int warmup = 1;
  std::string device = "auto";
  std::string precision;  // empty: fp32 on the CPU, fp16 on CUDA
  bool no_cuda_graphs = false;
  bool json = false;
  bool compare_pytorch = false;
  bool pytorch_compile = false;  // also torch.compile (CUDA: at the engine's precision)
  int pytorch_timeout = 0;       // seconds per PyTorch run; 0: none
  std::string pytorch_variants;  // CUDA: comma-separated list replacing the default runs
  bool compare_onnxruntime = false, compare_openvino = false;
  std::string compare;  // comma-separated peers: pytorch, onnxruntime, openvino
  std::string peers_python;  // the ONNX peers' interpreter (else $GPEN_PEERS_PYTHON)
  bool accuracy = false;
  std::string accuracy_reference;  // --accuracy against this .gpw (e.g. the fp32 file of an 8-bit one)
  std::string weights_dtype;       // synthetic weights: int8 / fp8 conv weights
  std::string dense_dtype, dense_layers = "modulation";  // synthetic 8-bit weights: 8-bit dense layers
  int group_size = -1;                                    // synthetic 8-bit weights: scales per group
  bool profile = false;
  std::string detector, image, pytorch_checkpoint;  // --arch retinaface
  std::string save_weights;                          // --arch gfpgan: keep the synthetic weights' .gpw here
  int sr_scale = 2, num_block = 23;                  // --arch realesrnet (--size: the input side)
  double fidelity = 0.5;                             // --arch codeformer: w
};
void run_bench(BenchArgs a);

}  // namespace gpen::cli
