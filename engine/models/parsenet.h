#pragma once
// GPEN's face parser, ParseNet (gpen-semantics.md "Face parsing mask"), as an engine graph for
// any input size (multiples of 16, at least 32: the encoder halves four times and reflection
// padding needs two rows at the bottom), and ParseNetModel, which loads a converted .gpw (arch
// "parsenet": every conv with its BatchNorm folded, HWIO) and runs it on a backend.
//
// Every 3x3 conv of ParseNet reads a reflection-padded input (nearest-upsampled first in the up
// blocks): a pad_reflect node (upsample and pad in one gather) feeds a conv2d with zero padding 0,
// so the convs keep conv2d's fast paths. An up block's shortcut and conv1 read the same padded
// map, made once.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/graph/graph.h"
#include "engine/models/f32_network.h"
#include "engine/plan/memory_plan.h"
#include "engine/runtime/backend.h"

namespace gpen {

constexpr int kParseClasses = 19;
constexpr int kParseSize = 512;  // FaceParse runs ParseNet at 512 x 512 whatever the face size

struct ParseNetGraph {
  Graph graph;
  int input = -1;   // [N, H, W, 3] RGB in [-1, 1]
  int logits = -1;  // [N, H, W, 19] out_mask_conv
  int image = -1;   // [N, H, W, 3] out_img_conv (only with `with_image`; FaceParse ignores it)
};

// Throws gpen::Error for a size that is not a multiple of 16 in [32, 4096] or a batch < 1.
// channel_div > 1 divides every hidden channel count (64..256) by it: the same structure with
// narrow layers, for emulated device tests only (no checkpoint has that layout).
ParseNetGraph build_parsenet_graph(int h, int w, int batch = 1, bool with_image = false, int channel_div = 1);

class ParseNetModel {
 public:
  // A .gpw of arch "parsenet"; half-precision files are widened to f32 once. On a device backend
  // the weights go up in one allocation.
  ParseNetModel(const std::string& gpw_path, Backend& backend);
  ~ParseNetModel();
  ParseNetModel(const ParseNetModel&) = delete;
  ParseNetModel& operator=(const ParseNetModel&) = delete;

  // Plans for an h x w input (cached: the last size is kept). Runs in the memory lent by
  // share_memory when the plan fits it, else in the model's own.
  void prepare(int h, int w);
  // The plan prepare(h, w) would run, without binding any memory (to size a lender's arena).
  const MemoryPlan& plan_for(int h, int w);
  // Memory of this backend's device that the caller leaves alone while this model runs
  // (FaceRestorer lends GPEN's arena: parsing, detection and restoration take turns).
  void share_memory(void* arena, size_t arena_bytes, void* workspace, size_t workspace_bytes);
  bool uses_shared_memory() const { return net_.uses_shared_memory(); }
  const MemoryPlan& plan() const { return net_.plan(); }
  const Graph& graph() const { return net_.graph(); }
  Backend& backend() const { return net_.backend(); }
  size_t weights_bytes() const { return net_.weights_bytes(); }

  // in: [h, w, 3] RGB in [-1, 1] (host); logits: [h, w, 19] (host).
  void run(const float* in, int h, int w, float* logits);
  // The class map and the MASK_COLORMAP keep (255) / drop (0) mask, h * w bytes each (host;
  // either may be nullptr): cpu::parse_labels on the logits (downloaded on a device backend).
  void parse(const float* in, int h, int w, uint8_t* labels, uint8_t* mask);
  // One run of the prepared size with every node timed (Executor::run_profiled), for
  // `gpen bench --arch parsenet --profile`.
  std::vector<double> run_profiled(const float* in);

 private:
  F32Network net_;
  std::vector<float> logits_;  // host copy for parse()
};

}  // namespace gpen
