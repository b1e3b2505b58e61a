#pragma once
// Backend-independent attributes of every op. The CPU kernels (kernels/cpu/) and their CUDA
// twins (kernels/cuda/) take the same structs, so a graph runs unchanged on either backend.
#include <cmath>
#include <cstdint>
#include <vector>

namespace gpen {

// y = gain * (x >= 0 ? x : slope * x). One formula covers identity (slope 1, gain 1), relu
// (slope 0), leaky relu (slope a) and StyleGAN's scaled leaky relu (slope 0.2, gain sqrt 2).
struct Activation {
  float slope = 1.0f;
  float gain = 1.0f;
  static Activation none() { return {1.0f, 1.0f}; }
  static Activation relu() { return {0.0f, 1.0f}; }
  static Activation leaky(float a) { return {a, 1.0f}; }
  static Activation scaled_leaky() { return {0.2f, static_cast<float>(M_SQRT2)}; }
  bool is_identity() const { return slope == 1.0f && gain == 1.0f; }
  float operator()(float x) const { return gain * (x >= 0.0f ? x : slope * x); }
};

// NHWC convolution. Weight layout HWIO: [kh][kw][cin/groups][cout]; a depthwise conv has
// groups == cin == cout and weight [kh][kw][1][c]. Optional inputs, in order after x and w:
// bias [cout] (has_bias), residual NHWC of the output shape (has_residual) added after the
// activation. Output may be a channel slice of a larger buffer (its strides say so).
struct Conv2dParams {
  int kh = 1, kw = 1;
  int stride_h = 1, stride_w = 1;
  int pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int groups = 1;
  bool has_bias = false;
  bool has_residual = false;
  Activation act;
  // With a residual: y = act(conv + bias + residual) instead of act(conv + bias) + residual (the
  // relu after a ResNet block's add, without a pass of its own).
  bool act_after_residual = false;
  // When > 0, the output height a kernel decides its blocking for (the CUDA depth split) instead
  // of the call's own: a band of rows of a larger output (engine/plan/banding.h) then sums every
  // pixel in the same order as the whole op, so banded results are bit-identical.
  int split_rows = 0;
};

// y[n, o] = act(sum_i x[n, i] * w[o, i] * w_scale + b[o] * b_scale). Weight layout [out][in]
// as in PyTorch; the scales let equalized-lr layers run on unscaled weights when needed.
struct DenseParams {
  bool has_bias = false;
  float w_scale = 1.0f;
  float b_scale = 1.0f;
  Activation act;
};

// y = act(x + bias[c]) over the last axis (c); bias optional. Elementwise, may run in place.
struct BiasActParams {
  bool has_bias = false;
  Activation act;
};

// y = act(a + b), same shapes. Elementwise, may run in place on a.
struct AddParams {
  Activation act;
};

// NHWC nearest resize to an explicit size: src = floor(dst * in / out) (PyTorch 'nearest').
struct ResizeNearestParams {
  int out_h = 0, out_w = 0;
};

// NHWC upfirdn2d: zero-insert (up), pad (negative pad crops), true 2-D convolution with the FIR
// kernel (row-major kh x kw, flipped as convolution requires), keep every down-th sample.
// out = (in * up + pad0 + pad1 - k) / down + 1 on each axis.
struct UpFirDn2dParams {
  int up_x = 1, up_y = 1;
  int down_x = 1, down_y = 1;
  int pad_x0 = 0, pad_x1 = 0, pad_y0 = 0, pad_y1 = 0;
  int kh = 1, kw = 1;
  std::vector<float> kernel;  // kh * kw taps
  // Optional epilogue: y = act(y * out_scale[n, c] + bias[c]); inputs after x: out_scale [N, C]
  // (has_out_scale), bias [C] (has_bias). Lets the blur after a modulated transposed conv
  // finish the layer in one pass.
  bool has_out_scale = false;
  bool has_bias = false;
  Activation act;
};

// NHWC reflection padding (mirror without repeating the edge: row -1 = row 1), optionally after a
// nearest upsample by `up` (out[y][x] = in[y / up][x / up]) in the same gather: ParseNet's
// Upsample + ReflectionPad2d in front of a zero-padding conv, so conv2d keeps its fast paths.
// y is [N, up H + 2 pad, up W + 2 pad, C]; pad < up H and pad < up W.
struct PadReflectParams {
  int pad = 1;
  int up = 1;
};

// Softmax over the last axis.
struct SoftmaxParams {};

// NHWC max pooling; padded positions never win (PyTorch pads with -inf). ResNet's stem pool.
struct MaxPool2dParams {
  int kh = 3, kw = 3;
  int stride_h = 2, stride_w = 2;
  int pad_top = 1, pad_left = 1, pad_bottom = 1, pad_right = 1;
};

// NHWC pixel unshuffle (space-to-depth) by `factor`, PyTorch's channel order:
// y[n, i, j, c*f*f + dy*f + dx] = x[n, f*i + dy, f*j + dx, c]. H and W must be multiples of f.
// RRDBNet's input for scales 2 (f 2) and 1 (f 4).
struct PixelUnshuffleParams {
  int factor = 2;
};

// ---- GPEN (StyleGAN2 decoder) ops

// y = x * rsqrt(mean over the last axis of x^2 + 1e-8) (StyleGAN's PixelNorm on latent vectors).
struct PixelNormParams {};

// Demodulation factors of a modulated conv in the decomposed form:
// d[n, o] = rsqrt(sum_i s[n, i]^2 * Q[o, i] + 1e-8). Inputs: s [N, Cin], Q [Cout, Cin].
struct DemodParams {};

// StyleGAN2 modulated convolution in the decomposed form, so a batch of faces shares one weight:
//   acc = conv(x_cat * s[n, :], W) ;  y = act(acc * d[n, o] + bias[o]) + residual
// Inputs, in order (absent optional ones are -1):
//   x      NHWC [N or 1, H, W, C1]   (batch 1 is broadcast: the constant input of the decoder)
//   x2     NHWC [N, H, W, C2]        optional second source concatenated after x on the channel
//                                   axis and read on the fly as act2(x2 * x2_scale + x2_bias[c]):
//                                   GPEN's noise injection (the encoder feature) without a copy
//   x2_scale [1], x2_bias [C2]       with x2
//   w      HWIO [k][k][C1 + C2][Cout] (equalized-lr scale folded in by the converter)
//   s      [N, C1 + C2]              style (per-sample input-channel scale)
//   d      [N, Cout]                 demodulation factors (optional)
//   bias   [Cout]                    optional
//   residual NHWC like y             optional, added after the activation (ToRGB's skip)
// up == false: same-padding conv (k // 2; pad_top / pad_bottom below crop rows), y has x's size.
// up == true:  transposed conv, stride 2, padding 0: y is [N, 2H + 1, 2W + 1, Cout] (k = 3;
//              crop_top / crop_bottom below crop rows) with NO
//              epilogue (d, bias, act, residual must be absent); the 4x4 blur that follows
//              (upfirdn2d with its epilogue) brings it to 2H and applies d, bias and act.
struct ModConvParams {
  int k = 3;
  bool up = false;
  bool has_x2 = false;
  Activation x2_act;
  bool has_demod = false;
  bool has_bias = false;
  bool has_residual = false;
  Activation act;
  int split_rows = 0;  // as in Conv2dParams: the output height the CUDA depth split is decided for
  // Same-padding conv only (up == false): the zero rows above and below the input, as in
  // Conv2dParams; y has H + pad_top + pad_bottom - k + 1 rows. -1 is k / 2 (the same padding). A
  // band of a larger output (engine/plan/banding.h) sets 0 at an edge inside the image, so it
  // computes exactly its rows from an input band that carries the halo rows.
  int pad_top = -1, pad_bottom = -1;
  // Transposed conv only (up == true): rows dropped from the top / bottom of its whole output of
  // 2 (H - 1) + k rows; y has 2 (H - 1) + k - crop_top - crop_bottom rows, y's row j being the
  // whole output's row crop_top + j (the same sum in the same order). A band (engine/plan/
  // banding.h) then computes exactly its rows from the input rows they gather from. Columns are
  // never cropped.
  int crop_top = 0, crop_bottom = 0;
  int top() const { return pad_top < 0 ? k / 2 : pad_top; }
  int bottom() const { return pad_bottom < 0 ? k / 2 : pad_bottom; }
  bool cropped() const { return top() != k / 2 || bottom() != k / 2 || crop_top != 0 || crop_bottom != 0; }
  // The output rows for H input rows.
  int64_t out_rows(int64_t H) const {
    return up ? 2 * (H - 1) + k - crop_top - crop_bottom : H + top() + bottom() - k + 1;
  }
};

// ---- GFPGAN (U-Net encoder, StyleGAN2-clean decoder) ops

// NHWC bilinear resize to an explicit size, PyTorch's F.interpolate(mode='bilinear',
// align_corners=False): on each axis the source of output index o is max((o + 0.5) * in / out
// - 0.5, 0), between its floor and the next index, the last clamped to the edge. GFPGAN resizes
// by 2 (ResBlock up, upsampling StyleConv, ToRGB's skip) and by 1/2 (ResBlock down).
// A band of rows (engine/plan/banding_rows.cpp) computes rows [out_row0, out_row0 + y rows) of the
// whole op's out_h x out_w output from x, the rows [in_row0, in_row0 + x rows) of the whole op's
// input of in_h rows: the source rows and weights are those of the global rows, so each band row
// equals the whole op's. in_h = 0: x is the whole input and y the whole output.
struct ResizeBilinearParams {
  int out_h = 0, out_w = 0;
  int in_h = 0, in_row0 = 0, out_row0 = 0;
};

// The clean StyleConv's epilogue after its modulated conv x:
//   y = act(x * gain + noise_weight * noise[h, w] + bias[c])
// Inputs: x NHWC [N, H, W, C], noise [H', W] with H' >= noise_row0 + H, noise_weight [1], bias [C]
// (has_bias). Row h of x takes noise row noise_row0 + h (a band of rows reads the whole map's).
// Elementwise, may run in place.
struct NoiseBiasActParams {
  float gain = 1.0f;
  bool has_bias = false;
  Activation act;
  int noise_row0 = 0;
};

// GFPGAN's Spatial Feature Transform: y = x * scale + shift on the channels from c0 (c0 = C / 2
// with sft_half, 0 otherwise), y = x below. Inputs: x NHWC [N, H, W, C], scale and shift
// [N, H, W, C - c0]. Elementwise, may run in place.
struct SftParams {
  int64_t c0 = 0;
};

// ---- Transformer ops (CodeFormer, RestoreFormer++)

// NHWC GroupNorm, nn.GroupNorm(groups, C, eps, affine): per sample and group of C / groups
// consecutive channels, y = (x - mean) / sqrt(var + eps) * gamma[c] + beta[c], var biased, over
// H x W x C / groups values. Inputs: x [N, H, W, C], gamma and beta [C] (affine). With silu the
// result goes through x * sigmoid(x) in the same pass (VQGAN's ResBlock: normalize then swish).
struct GroupNormParams {
  int groups = 32;
  float eps = 1e-6f;
  bool affine = true;
  bool silu = false;
};

// nn.LayerNorm over the last axis: y = (x - mean) / sqrt(var + eps) * gamma + beta (affine),
// var biased. Inputs: x [..., C], gamma and beta [C].
struct LayerNormParams {
  float eps = 1e-5f;
  bool affine = true;
};

// CodeFormer's adaptive_instance_normalization: per sample and channel, the content's mean and
// standard deviation traded for the style's, y = (x - mean_x) / std_x * std_s + mean_s, with
// std = sqrt(var + eps) and var unbiased (torch.var) over the H x W positions. Inputs: content x
// [N, H, W, C] and style [N, H', W', C], each with at least two positions. Not in place.
struct AdaInParams {
  float eps = 1e-5f;
};

// The smooth activations of the transformer blocks, elementwise (may run in place): GELU in the
// exact erf form of nn.GELU(), x * 0.5 * (1 + erf(x / sqrt 2)); SiLU / swish, x * sigmoid(x).
enum class SmoothAct : uint8_t { gelu, silu };
struct SmoothActParams {
  SmoothAct fn = SmoothAct::gelu;
};

// nn.MultiheadAttention as CodeFormer's TransformerSALayer calls it, self-attention with a
// position embedding added to the queries and keys but not the values:
//   q = (x + pos) Wq^T + bq,  k = (x + pos) Wk^T + bk,  v = x Wv^T + bv
//   per head h (d = E / heads channels): o_h = softmax(q_h k_h^T / sqrt d) v_h
//   y = concat_h(o_h) Wo^T + bo
// With has_query it is cross-attention: the queries come from another sequence of x's shape,
// q = (query + pos) Wq^T + bq, keys and values from x as above (RestoreFormer++'s
// MultiHeadAttnBlock: queries from the encoder's feature, keys and values from the decoder's).
// Inputs: x [N, L, E], pos [N or 1, L, E] (has_pos), in_w [3E, E] (q, k, v rows, PyTorch's
// in_proj_weight), in_b [3E], out_w [E, E], out_b [E], query [N, L, E] (has_query). y [N, L, E].
// The engine's sequences are batch-first (PyTorch's module takes [L, N, E]; the same numbers).
struct AttentionParams {
  int heads = 8;
  bool has_pos = false;
  bool has_query = false;
};

// The nearest codebook entry of each feature vector, and that entry gathered:
//   argmax: z holds logits [N, H, W, K]; index = argmax_k softmax(z) = argmax_k z (softmax is
//           monotonic; CodeFormer's topk(softmax(logits), 1)), codebook [K, C];
//   argmin: z holds features [N, H, W, C]; index = argmin_k |z|^2 + |e_k|^2 - 2 z . e_k (VQGAN's
//           VectorQuantizer), codebook [K, C].
// Ties go to the first index, as torch.argmax / argmin. Outputs: the gathered features
// [N, H, W, C] and the indices [N, H, W] as i32.
enum class CodeLookup : uint8_t { argmax, argmin };
struct CodeLookupParams {
  CodeLookup mode = CodeLookup::argmax;
};

// CodeFormer's Fuse_sft_block output: y = dec + w * (dec * scale + shift). Inputs: dec, scale,
// shift NHWC [N, H, W, C]. Elementwise, may run in place on dec.
struct FuseSftParams {
  float w = 1.0f;
};

// CodeFormer's PositionEmbeddingSine for an H x W map: [H, W, 2 num_pos_feats], the y half
// first (kernels/cpu/position_embedding.cpp). A plan-time constant, not a graph op.
struct PositionSineParams {
  int num_pos_feats = 64;
  float temperature = 10000.0f;
  bool normalize = false;
  float scale = static_cast<float>(2.0 * M_PI);
};

struct TensorView;
// The tensors of one modconv, as documented above; absent optional ones are nullptr. Shared by
// the CPU and CUDA ops (on CUDA every view is device memory, x2_scale included).
struct ModConvArgs {
  const TensorView* x = nullptr;
  const TensorView* x2 = nullptr;
  const TensorView* x2_scale = nullptr;
  const TensorView* x2_bias = nullptr;
  const TensorView* w = nullptr;
  const TensorView* s = nullptr;
  const TensorView* d = nullptr;
  const TensorView* bias = nullptr;
  const TensorView* residual = nullptr;
};

// The tensors of one attention, as documented at AttentionParams; pos and query are nullptr
// without one.
struct AttentionArgs {
  const TensorView* x = nullptr;
  const TensorView* pos = nullptr;
  const TensorView* in_w = nullptr;
  const TensorView* in_b = nullptr;
  const TensorView* out_w = nullptr;
  const TensorView* out_b = nullptr;
  const TensorView* query = nullptr;
};

}  // namespace gpen
