#pragma once
// The graph IR: a model is a list of ops over tensor ids, built for one concrete (resolution,
// batch). Shapes are inferred as ops are added. Views (reshape, channel slices) alias the storage
// of a root tensor; the planner gives storage to roots only.
#include <array>
#include <string>
#include <variant>
#include <vector>

#include "engine/core/tensor.h"
#include "kernels/params.h"

namespace gpen {

enum class TensorKind : uint8_t {
  Input,         // written by the caller before a run; lives in the arena
  Weight,        // read-only, bound by name to the weight store; not in the arena
  Intermediate,  // produced by an op; lives in the arena
  View,          // aliases a window of another tensor's storage
};

struct TensorDesc {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  std::array<int64_t, kMaxRank> strides{};  // in elements
  TensorKind kind = TensorKind::Intermediate;
  bool is_output = false;  // kept alive to the end of the run
  int base = -1;           // View: the tensor aliased (itself possibly a view)
  int64_t offset = 0;      // View: element offset into base
  size_t bytes() const { return static_cast<size_t>(shape.numel()) * dtype_size(dtype); }
};

using OpParams = std::variant<Conv2dParams, DenseParams, BiasActParams, AddParams, ResizeNearestParams,
                              UpFirDn2dParams, SoftmaxParams, PixelNormParams, DemodParams, ModConvParams,
                              MaxPool2dParams, PixelUnshuffleParams, PadReflectParams, ResizeBilinearParams,
                              NoiseBiasActParams, SftParams, GroupNormParams, LayerNormParams, SmoothActParams,
                              AttentionParams, CodeLookupParams, FuseSftParams, AdaInParams>;

const char* op_name(const OpParams& p);

struct Node {
  std::string name;
  OpParams params;
  std::vector<int> inputs;   // -1 for an absent optional input
  std::vector<int> outputs;
  // Index into inputs of an operand whose storage output 0 may take over when that operand dies
  // at this node (elementwise ops). The planner decides; -1 means never in place.
  int inplace_input = -1;
};

class Graph {
 public:
  // ---- tensors
  int input(const std::string& name, DType dt, const Shape& s);
  int weight(const std::string& name, DType dt, const Shape& s);
  // A root buffer filled by ops writing into views of it (e.g. a concat target).
  int buffer(const std::string& name, DType dt, const Shape& s);
  // View of channels [c0, c0 + c) of an NHWC (or [N, C]) tensor; last axis is the channel axis.
  int slice_channels(int t, int64_t c0, int64_t c, const std::string& name = "");
  // View of rows [r0, r0 + rows) of an NHWC tensor (axis 1): the strides stay the parent's, so
  // at batch 1 the band of rows is contiguous (banded execution, engine/plan/banding.h).
  int slice_rows(int t, int64_t r0, int64_t rows, const std::string& name = "");
  // View with another shape; t must be dense.
  int reshape(int t, const Shape& s, const std::string& name = "");
  void mark_output(int t);

  // ---- ops (each returns its output tensor; `out` >= 0 writes into an existing view instead)
  int conv2d(int x, int w, int bias, const Conv2dParams& p, int residual = -1, int out = -1,
             const std::string& name = "");
  int dense(int x, int w, int bias, const DenseParams& p, const std::string& name = "");
  int bias_act(int x, int bias, const BiasActParams& p, int out = -1, const std::string& name = "");
  int add(int a, int b, const AddParams& p, int out = -1, const std::string& name = "");
  int resize_nearest(int x, int out_h, int out_w, const std::string& name = "");
  // out_scale [N, C] and bias [C] feed the optional epilogue (see UpFirDn2dParams).
  int upfirdn2d(int x, const UpFirDn2dParams& p, int out = -1, const std::string& name = "",
                int out_scale = -1, int bias = -1);
  int softmax(int x, const std::string& name = "");
  int max_pool2d(int x, const MaxPool2dParams& p, const std::string& name = "");
  int pixel_unshuffle(int x, int factor, const std::string& name = "");
  int pad_reflect(int x, const PadReflectParams& p, const std::string& name = "");
  int pixel_norm(int x, const std::string& name = "");
  int demod(int s, int q, const std::string& name = "");
  // GFPGAN (kernels/params.h): bilinear resize to an explicit size; the clean StyleConv's epilogue
  // (noise [H, W], noise_weight [1], bias [C] or -1); SFT on channels [c0, C) (scale, shift
  // [N, H, W, C - c0]). The last two may run in place.
  int resize_bilinear(int x, int out_h, int out_w, const std::string& name = "");
  int noise_bias_act(int x, int noise, int noise_weight, int bias, const NoiseBiasActParams& p,
                     const std::string& name = "");
  int sft(int x, int scale, int shift, int64_t c0, const std::string& name = "");
  // CodeFormer / RestoreFormer++ (kernels/params.h; engine/graph/graph_transformer.cpp). gamma and
  // beta are -1 without affine. smooth_act, layer_norm and fuse_sft may run in place.
  int group_norm(int x, int gamma, int beta, const GroupNormParams& p, const std::string& name = "");
  int layer_norm(int x, int gamma, int beta, const LayerNormParams& p, const std::string& name = "");
  int smooth_act(int x, SmoothAct fn, const std::string& name = "");
  // Self-attention of x [N, L, E] with pos [1 or N, L, E] (or -1) added to queries and keys;
  // cross-attention with the queries from query [N, L, E] (or -1: from x).
  struct AttentionInputs {
    int x = -1, pos = -1, in_w = -1, in_b = -1, out_w = -1, out_b = -1, query = -1;
  };
  int attention(const AttentionInputs& in, int heads, const std::string& name = "");
  // The gathered codebook entries [N, H, W, C] and their indices [N, H, W] (i32).
  struct CodeLookupOutputs {
    int features = -1, indices = -1;
  };
  CodeLookupOutputs code_lookup(int z, int codebook, CodeLookup mode, const std::string& name = "");
  int fuse_sft(int dec, int scale, int shift, float w, const std::string& name = "");
  // The content's per-channel statistics traded for the style's (AdaInParams).
  int adain(int content, int style, const AdaInParams& p, const std::string& name = "");
  // Inputs as in ModConvParams (x, x2, x2_scale, x2_bias, w, s, d, bias, residual); -1 if absent.
  struct ModConvInputs {
    int x = -1, x2 = -1, x2_scale = -1, x2_bias = -1, w = -1, s = -1, d = -1, bias = -1, residual = -1;
  };
  int modconv(const ModConvInputs& in, const ModConvParams& p, int out = -1, const std::string& name = "");

  // ---- generic node insertion for op families defined elsewhere
  int add_node(Node n);  // returns node index
  // Replaces the node list (graph transforms: reordering, rematerialization). Every input and
  // output must name an existing tensor; the caller keeps the order topological.
  void replace_nodes(std::vector<Node> nodes);
  int new_intermediate(const std::string& name, DType dt, const Shape& s);

  const std::vector<TensorDesc>& tensors() const { return tensors_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const TensorDesc& tensor(int id) const { return tensors_.at(id); }
  std::vector<int> inputs() const;
  std::vector<int> outputs() const;
  // The root tensor whose storage t lives in, and t's element offset within it.
  int root_of(int t) const;
  int64_t offset_in_root(int t) const;
  size_t weights_bytes() const;
  DType activation_dtype() const { return act_dtype_; }
  void set_activation_dtype(DType d) { act_dtype_ = d; }

 private:
  int add_tensor(TensorDesc d);
  int output_for(int out, const std::string& name, const Shape& s, DType dt);
  std::string auto_name(const std::string& name, const char* op);
  std::vector<TensorDesc> tensors_;
  std::vector<Node> nodes_;
  DType act_dtype_ = DType::f32;
};

// Floating-point operations of one node (multiply-add = 2), from shapes alone: used to weigh
// recomputation against memory. Approximate for non-matmul ops (one per output element and tap).
double node_flops(const Graph& g, const Node& n);
double graph_flops(const Graph& g);

}  // namespace gpen
