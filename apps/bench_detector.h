#pragma once
// `gpen bench --arch retinaface`: time RetinaFace detect() on one photo (pre-processing, network,
// decode and NMS, as the pipeline runs it), optionally against the PyTorch reference on the same
// photo and weights in the same run, on the same device (--device cuda: the network on the GPU
// for both; the engine's figures then include its device memory).
#include <string>
#include <vector>

namespace gpen::cli {

struct DetectorBenchArgs {
  std::string detector;     // .gpw
  std::string pytorch_pth;  // the checkpoint the PyTorch peer loads (.pth)
  std::string image;
  std::string device = "auto";
  int runs = 10, warmup = 2;
  bool json = false, compare_pytorch = false;
  bool profile = false;  // each node of the network timed alone (apps/bench_detector_profile.h)
  int pytorch_timeout = 0;  // seconds for the PyTorch run; 0: none
  std::vector<std::string> onnx_peers;  // onnxruntime, openvino (CPU, fp32, the network alone)
  std::string peers_python;             // their interpreter (apps/peer.h: peers_python)
};

void run_detector_bench(const DetectorBenchArgs& a);

}  // namespace gpen::cli
