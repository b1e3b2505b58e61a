#pragma once
// CodeFormer as an engine graph, with weight names and layouts as the converter writes them
// (converter/convert_codeformer.cpp, docs/weights-format.md), and CodeformerModel, which loads that
// .gpw (arch "codeformer") and runs the raw network on a backend.
//
// The network, as CodeFormer.forward(x, w, adain=True) at inference: VQGAN's encoder (ResBlocks,
// stride-2 downsampling, attention at 16 x 16) gives the 16 x 16 x 256 feature lq_feat and keeps
// its features at the connect_list sizes; a transformer (feat_emb, n_layers TransformerSALayers
// with the learned position embedding, the idx_pred_layer logits) picks one codebook entry per
// position (top-1); the gathered codes take lq_feat's per-channel mean and std (adaptive instance
// normalisation); VQGAN's generator decodes them, its features at the connect_list sizes fused
// with the encoder's by Fuse_sft_blocks at fidelity w (skipped at w = 0, as the official code).
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

struct CodeformerNetConfig {
  int dim_embd = 512;
  int n_head = 8;
  int n_layers = 9;
  int codebook_size = 1024;
  std::vector<int> connect_list = {32, 64, 128, 256};
  float w = 0.5f;  // fidelity weight of the fuse blocks, in [0, 1]
  int batch = 1;
  DType act = DType::f32;  // the activation dtype: every weight, the input and the output in it

  static constexpr int kSize = 512;   // input and output resolution (fixed by the official class)
  static constexpr int kLatent = 16;  // the code map's side
  static constexpr int kEmbDim = 256; // a code's width
  void check() const;  // throws gpen::Error naming the bad value
};

// The configuration of a .gpw of arch "codeformer" (its header's config; w and batch default).
// Throws gpen::Error naming the file for another arch or a missing or impossible field.
CodeformerNetConfig codeformer_config_from_gpw(const GpwFile& f);

struct CodeformerGraph {
  Graph graph;
  int input = -1;    // [N, 512, 512, 3] RGB in [-1, 1]
  int output = -1;   // [N, 512, 512, 3] the raw generator output (not clipped)
  int indices = -1;  // [N, 16, 16] i32: the code picked at each position (row-major: the 256 tokens)
};

CodeformerGraph build_codeformer_graph(const CodeformerNetConfig& c);

class CodeformerModel {
 public:
  // A .gpw of arch "codeformer"; half-precision tensors are widened to f32 once. On a device
  // backend the weights are uploaded once, in `precision` (fp32 when not given; fp16 and bf16 on a
  // device only, network_precision()), the precision of the activations too.
  CodeformerModel(const std::string& gpw_path, Backend& backend, std::optional<DType> precision = std::nullopt);
  ~CodeformerModel();
  CodeformerModel(const CodeformerModel&) = delete;
  CodeformerModel& operator=(const CodeformerModel&) = delete;

  const CodeformerNetConfig& config() const { return config_; }
  DType precision() const { return config_.act; }
  // The graph and plan for `batch` faces at fidelity w (cached: the last pair is kept).
  const MemoryPlan& plan_for(int batch, float w);
  const Graph& graph() const { return net_.graph(); }
  size_t weights_bytes() const { return net_.weights_bytes(); }

  // in: [batch, 512, 512, 3] RGB in [-1, 1] (host); out: [batch, 512, 512, 3] (host); indices,
  // when not null: [batch, 256] (host).
  void run(const float* in, int batch, float w, float* out, int32_t* indices = nullptr);
  // As run() with each node timed alone (Executor::run_profiled): milliseconds per graph node.
  std::vector<double> run_profiled(const float* in, int batch, float w);

 private:
  F32Network net_;
  CodeformerNetConfig config_;
};

}  // namespace gpen
