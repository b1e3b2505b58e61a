#pragma once
// `gpen bench --arch gfpgan`: time GFPGANv1Clean (GfpganModel::run) per face on the CPU or CUDA (fp32,
// or fp16 / bf16 there with --precision), a
// converted .gpw or synthetic weights of a configuration, with the plan's memory figures; against
// ONNX Runtime and OpenVINO on the ONNX export of the official network with the same weights and
// input (--compare), and against the official PyTorch forward (--accuracy).
#include <string>
#include <vector>

namespace gpen::cli {

struct GfpganBenchArgs {
  std::string model;        // .gpw (arch gfpgan); empty: synthetic weights of the configuration below
  std::string pytorch_pth;  // with -m: the .pth it was converted from (for --compare / --accuracy)
  int size = 512, channel_multiplier = 2, batch = 1;
  double narrow = 1.0;
  int runs = 5, warmup = 1;
  bool json = false, accuracy = false;
  std::vector<std::string> onnx_peers;  // onnxruntime, openvino
  std::string peers_python;
  int peer_timeout = 0;  // seconds per export / peer run; 0: none
  std::string save_weights;  // without model: the synthetic weights' .gpw is copied here
  std::string device = "cpu";  // cpu, cuda or auto; on a device, --accuracy is against the CPU backend
  std::string precision;       // fp32, fp16 or bf16 (16 bits on a device only); empty: fp32
};

void run_gfpgan_bench(const GfpganBenchArgs& a);

}  // namespace gpen::cli
