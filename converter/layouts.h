#pragma once
// The tensor layouts of the models the engine runs, as the official PyTorch code names and shapes
// them: the expected state dict of GPEN's FullGenerator for any configuration, and of RetinaFace
// with either backbone. Used to recognise a checkpoint, infer its configuration from shapes and
// report the first missing or misshaped tensor.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpen::conv {

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  bool optional = false;  // buffers the engine does not need (FIR kernels, BN counters)
  bool integer = false;   // int64 (BatchNorm num_batches_tracked)
};

std::string shape_str(const std::vector<int64_t>& s);

// ---- GPEN FullGenerator -------------------------------------------------------------------
struct GpenConfig {
  int size = 512;                  // input (encoder) resolution, a power of two in [16, 2048]
  double channel_multiplier = 2;   // official: 1 (GPEN-BFR-256) or 2
  double narrow = 1;               // official: 0.5 (GPEN-BFR-256) or 1
  int style_dim = 512;             // official: always 512
  int n_mlp = 8;                   // official: always 8
  // FullGenerator_SR: the decoder's resolution, larger than `size` (a Generator(out_size) fed by
  // the encoder of FullGenerator(size)). 0: a plain FullGenerator (output = size).
  int out_size = 0;

  int output_size() const { return out_size > 0 ? out_size : size; }
  bool is_sr() const { return out_size > 0 && out_size != size; }
  int log_size() const;
  int log_output_size() const;
  // ch(r) of the official code: int(512 n) for r <= 32, int(256 cm n) at 64, ... int(8 cm n) at 2048.
  int channels(int res) const;
  void check() const;  // throws gpen::Error for an impossible configuration
  nlohmann::json to_json() const;
  static GpenConfig from_json(const nlohmann::json& j);
};

std::vector<TensorSpec> gpen_layout(const GpenConfig& c);
// The official class a configuration builds: "FullGenerator 512" or "FullGenerator_SR 256 -> 512".
std::string gpen_model_name(const GpenConfig& c);


// ---- RetinaFace ---------------------------------------------------------------------------
enum class RetinaBackbone { mobilenet025, resnet50 };
const char* backbone_name(RetinaBackbone b);  // "mobilenet0.25" / "resnet50"
RetinaBackbone parse_backbone(const std::string& s);

// One convolution of RetinaFace and the BatchNorm that follows it (folded by the converter).
struct ConvUnit {
  std::string conv;  // module path, e.g. "body.stage1.0.0"
  std::string bn;    // BatchNorm module path, "" for the bias-carrying head convs
  int64_t out = 0, in = 0, k = 1;
  int64_t groups = 1;  // depthwise convs: groups == in == out
  bool conv_bias = false;
};
std::vector<ConvUnit> retinaface_units(RetinaBackbone b);
std::vector<TensorSpec> retinaface_layout(RetinaBackbone b);
nlohmann::json retinaface_config(RetinaBackbone b);  // {"backbone", "in_channel", "out_channel"}

// ---- RealESRNet (RRDBNet, background super-resolution) ------------------------------------
// RRDBNet(num_in_ch, num_out_ch, num_feat, num_block, num_grow_ch, scale) as GPEN's realesrnet_x1/
// x2/x4 (official: 3, 3, 32, 23, 32). The converter takes every dimension from the shapes, so
// reduced test models (fewer blocks) convert and run too. converter/layouts_realesrnet.cpp.
struct RealesrnetConfig {
  int scale = 2;  // 1, 2 or 4 (conv_first has 48, 12 or 3 input channels)
  int num_in_ch = 3, num_out_ch = 3;
  int num_feat = 32, num_block = 23, num_grow_ch = 32;
  int unshuffle() const { return scale == 2 ? 2 : scale == 1 ? 4 : 1; }
  void check() const;
  nlohmann::json to_json() const;
  static RealesrnetConfig from_json(const nlohmann::json& j);
};
std::vector<TensorSpec> realesrnet_layout(const RealesrnetConfig& c);
// Whether the keys look like an RRDBNet state dict (conv_first + conv_body).
bool looks_like_realesrnet(const std::map<std::string, std::vector<int64_t>>& shapes);
RealesrnetConfig infer_realesrnet(const std::map<std::string, std::vector<int64_t>>& shapes);

// ---- ParseNet (the face parser; converter/layouts_parsenet.cpp) -------------------------------
// Every conv of ParseNet-latest in state-dict order (module path "<...>.conv2d", BatchNorm path
// "<...>.norm.norm" or "" for the bias-carrying convs), out_img_conv included.
std::vector<ConvUnit> parsenet_units();
std::vector<TensorSpec> parsenet_layout();
nlohmann::json parsenet_config();  // the official constructor arguments (checkpoint_layouts.json)

// ---- GFPGAN (GFPGANv1Clean: a U-Net encoder with SFT conditions on a StyleGAN2 decoder) -----
// The official constructor arguments (converter/layouts_gfpgan.cpp). The released clean models
// (GFPGANv1.3, GFPGANv1.4, GFPGANCleanv1-NoCE-C2) are out_size 512, num_style_feat 512,
// channel_multiplier 2, narrow 1, different_w, sft_half, input_is_latent.
struct GfpganConfig {
  int out_size = 512;               // a power of two in [8, 1024]
  int num_style_feat = 512;
  double channel_multiplier = 2;
  double narrow = 1;
  int num_mlp = 8;                  // the style MLP (unused when input_is_latent)
  bool different_w = true;          // final_linear gives one style code per latent
  bool sft_half = true;             // SFT modulates the second half of the decoder's channels
  bool input_is_latent = true;      // the style code feeds the decoder directly (no style MLP)

  int log_size() const;
  int num_layers() const { return 2 * (log_size() - 2) + 1; }  // StyleConvs (and noise buffers)
  int num_latent() const { return 2 * log_size() - 2; }        // style codes the decoder reads
  int noise_resolution(int layer) const { return 1 << ((layer + 5) / 2); }
  int channels(int res) const;       // the decoder's channel table
  int unet_channels(int res) const;  // the U-Net's (narrow halved)
  void check() const;
  nlohmann::json to_json() const;
  static GfpganConfig from_json(const nlohmann::json& j);
};
std::vector<TensorSpec> gfpgan_layout(const GfpganConfig& c);
std::string gfpgan_model_name(const GfpganConfig& c);  // "GFPGANv1Clean 512"
bool looks_like_gfpgan(const std::map<std::string, std::vector<int64_t>>& shapes);
GfpganConfig infer_gfpgan(const std::map<std::string, std::vector<int64_t>>& shapes);

// ---- CodeFormer (a VQGAN encoder and decoder with a transformer predicting its codes) -------
// The official constructor arguments that shape the checkpoint (converter/layouts_codeformer.cpp).
// CodeFormer's constructor fixes its VQGAN: 512 x 512 input, nf 64, ch_mult (1, 2, 2, 4, 4, 8), two
// ResBlocks per resolution, attention at 16, 256-dimensional codes; the released model (codeformer.pth)
// is dim_embd 512, n_head 8, n_layers 9, codebook_size 1024, connect_list 32, 64, 128, 256.
struct CodeformerConfig {
  int dim_embd = 512;
  int n_head = 8;  // leaves no trace in the shapes: the official value
  int n_layers = 9;
  int codebook_size = 1024;
  std::vector<int> connect_list = {32, 64, 128, 256};  // the fuse blocks' resolutions, ascending

  static constexpr int kResolution = 512, kNf = 64, kEmbDim = 256, kLatent = 256;
  static int vqgan_channels(int res);  // the encoder's and generator's width at a resolution
  void check() const;
  nlohmann::json to_json() const;
  static CodeformerConfig from_json(const nlohmann::json& j);
};
std::vector<TensorSpec> codeformer_layout(const CodeformerConfig& c);
std::string codeformer_model_name(const CodeformerConfig& c);  // "CodeFormer 512"
bool looks_like_codeformer(const std::map<std::string, std::vector<int64_t>>& shapes);
CodeformerConfig infer_codeformer(const std::map<std::string, std::vector<int64_t>>& shapes);

// ---- RestoreFormer++ and RestoreFormer (VQVAEGANMultiHeadTransformer) -------------------------
// The official constructor arguments that shape the checkpoint (converter/layouts_restoreformer.cpp):
// a VQGAN-style encoder and decoder (ch_mult 1 2 2 4 4 8, two ResnetBlocks per level, attention at
// 16 x 16) and a codebook; the decoder's multi-head attention takes its queries from the encoder's
// features. RestoreFormer++ (RestoreFormer++.ckpt) is head_size 4 with attention at 32 x 32 too
// (ex_multi_scale_num 1); RestoreFormer (RestoreFormer.ckpt) head_size 8, ex_multi_scale_num 0.
// The released checkpoints hold the network under 'state_dict' with the prefix "vqvae.".
struct RestoreformerConfig {
  int ch = 64;
  int n_embed = 1024;
  int embed_dim = 256;
  int z_channels = 256;
  int head_size = 4;           // leaves no trace in the shapes: the official value of the variant
  int ex_multi_scale_num = 1;  // 1: RestoreFormer++, 0: RestoreFormer
  std::string key_prefix;      // "vqvae." in the released checkpoints; not stored in .gpw

  static constexpr int kResolution = 512, kNumResBlocks = 2;
  static constexpr int kChMult[6] = {1, 2, 2, 4, 4, 8};
  void check() const;
  nlohmann::json to_json() const;
  static RestoreformerConfig from_json(const nlohmann::json& j);
};
std::vector<TensorSpec> restoreformer_layout(const RestoreformerConfig& c);  // names with key_prefix
std::string restoreformer_model_name(const RestoreformerConfig& c);  // "RestoreFormer++ 512"
bool looks_like_restoreformer(const std::map<std::string, std::vector<int64_t>>& shapes);
RestoreformerConfig infer_restoreformer(const std::map<std::string, std::vector<int64_t>>& shapes);

// ---- Recognition --------------------------------------------------------------------------
enum class Arch { unknown, gpen, retinaface, realesrnet, parsenet, gfpgan, codeformer, restoreformer };
// "unknown", "gpen", "retinaface", "realesrnet", "parsenet", "gfpgan", "codeformer", "restoreformer"
const char* arch_name(Arch a);
Arch parse_arch(const std::string& s);

using ShapeMap = std::map<std::string, std::vector<int64_t>>;

// FullGenerator_SR recognition (converter/layouts_gpen_sr.cpp): the decoder's resolution from its
// ToRGB count, given an encoder for 2^log_in; 0 when it equals the encoder's (a FullGenerator).
// Throws gpen::Error for a decoder smaller than its encoder or larger than 2048.
int infer_gpen_out_size(const ShapeMap& shapes, int log_in);

struct Recognition {
  Arch arch = Arch::unknown;
  GpenConfig gpen;                                  // when arch == gpen
  RetinaBackbone backbone = RetinaBackbone::mobilenet025;  // when arch == retinaface
  RealesrnetConfig realesrnet;                      // when arch == realesrnet
  GfpganConfig gfpgan;                              // when arch == gfpgan
  CodeformerConfig codeformer;                      // when arch == codeformer
  RestoreformerConfig restoreformer;                // when arch == restoreformer
  nlohmann::json config;                            // the configuration as stored in .gpw
  std::vector<TensorSpec> layout;                   // the expected tensors for that configuration
};

// Recognises the model from key names and infers its configuration from shapes. `want` forces
// the architecture (Arch::unknown: auto). Throws gpen::Error when the model is not recognised.
Recognition recognize(const ShapeMap& shapes, Arch want = Arch::unknown);
Recognition recognize_gfpgan(const ShapeMap& shapes);  // recognize() for Arch::gfpgan
Recognition recognize_codeformer(const ShapeMap& shapes);  // recognize() for Arch::codeformer
Recognition recognize_restoreformer(const ShapeMap& shapes);  // recognize() for Arch::restoreformer

// Checks that every required tensor of `layout` is present with its exact shape (and every
// optional one present has its shape). Throws gpen::Error naming the first missing or misshaped
// tensor. Returns the names in `shapes` that the layout does not know (extras are not fatal).
std::vector<std::string> validate_layout(const std::vector<TensorSpec>& layout, const ShapeMap& shapes);

}  // namespace gpen::conv
