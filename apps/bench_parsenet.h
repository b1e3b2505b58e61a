#pragma once
// `gpen bench --arch parsenet -m PARSENET.gpw`: time ParseNet on a size x size input on the CPU,
// GFLOP/s from the graph's FLOPs, optionally node by node (--profile) and against the PyTorch
// re-creation (tests/reference/parsenet_reference.py) in the same run with the same threads.
#include <string>

namespace gpen::cli {

struct ParseBenchArgs {
  std::string model;        // .gpw (arch parsenet)
  std::string pytorch_pth;  // optional: the checkpoint PyTorch loads (else random weights)
  int size = 512;
  int runs = 3, warmup = 1;
  bool json = false, compare_pytorch = false, profile = false;
  int pytorch_timeout = 0;
};

void run_parsenet_bench(const ParseBenchArgs& a);

}  // namespace gpen::cli
