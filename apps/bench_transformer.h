#pragma once
// `gpen bench --arch codeformer|restoreformer`: time CodeFormer (at fidelity w) or RestoreFormer++
// per face on the CPU or CUDA, a converted .gpw or synthetic weights of the released configuration, with
// the plan's memory figures; against ONNX Runtime and OpenVINO on the ONNX export of the official
// network with the same weights and input (--compare), and against the official PyTorch forward
// (--accuracy: the output and the codes picked).
#include <string>
#include <vector>

namespace gpen::cli {

struct TransformerBenchArgs {
  std::string arch;         // codeformer or restoreformer
  std::string model;        // .gpw; empty: synthetic weights of the released configuration
  std::string pytorch_pth;  // with -m: the checkpoint it was converted from (for --compare / --accuracy)
  double w = 0.5;           // codeformer: fidelity
  int batch = 1, runs = 5, warmup = 1;
  bool json = false, accuracy = false, profile = false;
  std::vector<std::string> onnx_peers;  // onnxruntime, openvino
  std::string peers_python;
  int peer_timeout = 0;  // seconds per export / peer run; 0: none
  std::string device = "cpu";  // cpu, cuda or auto; on a device, --accuracy is against the CPU backend
  std::string precision;       // fp32, fp16 or bf16 (16 bits on a device only); empty: fp32
};

void run_transformer_bench(const TransformerBenchArgs& a);

}  // namespace gpen::cli
