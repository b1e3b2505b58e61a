#pragma once
// gpen bench --arch realesrnet: RRDBNet on a size x size input (synthetic weights), time per run,
// GFLOP/s, and with --compare-pytorch the PyTorch re-creation (tests/reference/rrdbnet_reference.py
// bench) on the same configuration and thread count, in the same run.
#include <string>

namespace gpen::cli {

struct SrBenchArgs {
  int scale = 2, size = 512, num_block = 23, runs = 3, warmup = 1;
  std::string device = "cpu";
  bool compare_pytorch = false, json = false;
};

void run_sr_bench(const SrBenchArgs& a);

}  // namespace gpen::cli
