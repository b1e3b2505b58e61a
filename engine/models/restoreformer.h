#pragma once
// RestoreFormer++ (and RestoreFormer) as an engine graph, with weight names and layouts as the
// converter writes them (converter/convert_restoreformer.cpp, docs/weights-format.md), and
// RestoreformerModel, which loads that .gpw (arch "restoreformer") and runs the raw network.
//
// The network, as VQVAEGANMultiHeadTransformer.forward at inference: a VQGAN-style encoder
// (ResnetBlocks, stride-2 downsampling, multi-head self-attention at 16 x 16) keeps its features
// before each downsampling and around its middle attention; quant_conv and the nearest codebook
// entry of each of the 16 x 16 positions (argmin of the squared distance); post_quant_conv and the
// decoder, whose multi-head attention blocks at 16 x 16 (and 32 x 32 in RestoreFormer++) take
// their queries from those encoder features and their keys and values from the decoder's own.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/graph/graph.h"
#include "engine/models/f32_network.h"
#include "engine/plan/memory_plan.h"
#include "engine/runtime/backend.h"

namespace gpen {

class GpwFile;

struct RestoreformerNetConfig {
  int ch = 64;
  int n_embed = 1024;
  int embed_dim = 256;
  int z_channels = 256;
  int head_size = 4;           // attention heads
  int ex_multi_scale_num = 1;  // 1: RestoreFormer++ (decoder attention at 16 and 32), 0: RestoreFormer
  int batch = 1;
  DType act = DType::f32;      // the activation dtype: every weight, the input and the output in it

  static constexpr int kSize = 512;   // input and output resolution
  static constexpr int kLatent = 16;  // the code map's side
  void check() const;  // throws gpen::Error naming the bad value
};

// The configuration of a .gpw of arch "restoreformer" (its header's config; batch defaults).
// Throws gpen::Error naming the file for another arch or a missing or impossible field.
RestoreformerNetConfig restoreformer_config_from_gpw(const GpwFile& f);

struct RestoreformerGraph {
  Graph graph;
  int input = -1;    // [N, 512, 512, 3] RGB in [-1, 1]
  int output = -1;   // [N, 512, 512, 3] the raw decoder output (not clipped)
  int indices = -1;  // [N, 16, 16] i32: the code picked at each position
};

RestoreformerGraph build_restoreformer_graph(const RestoreformerNetConfig& c);

class RestoreformerModel {
 public:
  // A .gpw of arch "restoreformer"; half-precision tensors are widened to f32 once.
  // On a device backend the weights are uploaded once, in `precision` (fp32 when not given; fp16
  // and bf16 on a device only, network_precision()), the precision of the activations too.
  RestoreformerModel(const std::string& gpw_path, Backend& backend, std::optional<DType> precision = std::nullopt);
  ~RestoreformerModel();
  RestoreformerModel(const RestoreformerModel&) = delete;
  RestoreformerModel& operator=(const RestoreformerModel&) = delete;

  const RestoreformerNetConfig& config() const { return config_; }
  DType precision() const { return config_.act; }
  // The graph and plan for `batch` faces (cached: the last one is kept).
  const MemoryPlan& plan_for(int batch);
  const Graph& graph() const { return net_.graph(); }
  size_t weights_bytes() const { return net_.weights_bytes(); }

  // in: [batch, 512, 512, 3] RGB in [-1, 1] (host); out: [batch, 512, 512, 3] (host); indices,
  // when not null: [batch, 256] (host).
  void run(const float* in, int batch, float* out, int32_t* indices = nullptr);
  // As run() with each node timed alone (Executor::run_profiled): milliseconds per graph node.
  std::vector<double> run_profiled(const float* in, int batch);

 private:
  F32Network net_;
  RestoreformerNetConfig config_;
};

}  // namespace gpen
