#pragma once
// GFPGANv1Clean (GFPGANv1.3, GFPGANv1.4, GFPGANCleanv1-NoCE-C2) as an engine graph, with weight
// names and layouts as the converter writes them (converter/convert_gfpgan.cpp,
// docs/weights-format.md), and GfpganModel, which loads that .gpw (arch "gfpgan") and runs the raw
// network on a backend.
//
// The network: a U-Net encoder (ResBlocks with bilinear resampling) whose 4x4 features give the
// style codes (final_linear) and whose decoder side gives, per resolution from 8, the SFT scale
// and shift; then the StyleGAN2-clean decoder, each upsampling StyleConv followed by the SFT of
// its output (on its second half of channels with sft_half). Noise is the stored buffers
// (randomize_noise=False), so a run is deterministic.
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

struct GfpganNetConfig {
  int out_size = 512;       // input and output resolution, a power of two in [8, 1024]
  int num_style_feat = 512;
  int channel_multiplier = 2;
  double narrow = 1.0;
  bool different_w = true;  // one style code per decoder layer (final_linear's rows) or one shared
  bool sft_half = true;     // SFT on the second half of the decoder's channels, else on all
  int batch = 1;
  DType act = DType::f32;   // the activation dtype: every weight, the input and the outputs in it

  int log_size() const;
  int num_latent() const { return 2 * log_size() - 2; }
  int channels(int res) const;       // the decoder's channel table (GPEN's)
  int unet_channels(int res) const;  // the U-Net's: the same table at half the narrow
  void check() const;                // throws gpen::Error naming the bad value
};

// The configuration of a .gpw of arch "gfpgan" (its header's config). Throws gpen::Error naming
// the file for another arch, a missing field, or a model whose style codes need the style MLP
// (input_is_latent false: no released clean model).
GfpganNetConfig gfpgan_config_from_gpw(const GpwFile& f);

struct GfpganGraph {
  Graph graph;
  int input = -1;       // [N, S, S, 3] RGB in [-1, 1]
  int output = -1;      // [N, S, S, 3] the raw decoder output (not clipped)
  int style_code = -1;  // [N, num_latent * num_style_feat] with different_w, else [N, num_style_feat]
};

GfpganGraph build_gfpgan_graph(const GfpganNetConfig& c);

class GfpganModel {
 public:
  // A .gpw of arch "gfpgan"; half-precision tensors are widened to f32 once. On a device
  // backend the weights are uploaded once, in `precision` (fp32 when not given; fp16 and bf16 on a
  // device only, network_precision()), the precision of the activations too.
  GfpganModel(const std::string& gpw_path, Backend& backend, std::optional<DType> precision = std::nullopt);
  ~GfpganModel();
  GfpganModel(const GfpganModel&) = delete;
  GfpganModel& operator=(const GfpganModel&) = delete;

  const GfpganNetConfig& config() const { return config_; }
  DType precision() const { return config_.act; }
  // The graph and plan for `batch` faces (cached: the last batch is kept).
  const MemoryPlan& plan_for(int batch);
  const Graph& graph() const { return net_.graph(); }
  size_t weights_bytes() const { return net_.weights_bytes(); }

  // in: [batch, S, S, 3] RGB in [-1, 1] (host); out: [batch, S, S, 3] (host); style_code, when
  // not null: [batch, style width] (host).
  void run(const float* in, int batch, float* out, float* style_code = nullptr);
  // As run() with each node timed alone (Executor::run_profiled): milliseconds per graph node.
  std::vector<double> run_profiled(const float* in, int batch);

 private:
  F32Network net_;
  GfpganNetConfig config_;
};

}  // namespace gpen
