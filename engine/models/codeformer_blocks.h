#pragma once
// Building blocks of the VQGAN-style networks (CodeFormer, RestoreFormer++) on the transformer ops
// (kernels/params.h), with the official modules' parameter names under a prefix, weights in the
// graph's activation dtype and the engine's layouts (conv weights HWIO).
#include <string>

#include "engine/graph/graph.h"

namespace gpen {

// A 3x3 conv with bias: stride 1 pads 1; stride 2 pads (0, 1, 0, 1), as VQGAN's Downsample pads
// before its unpadded stride-2 conv.
int vqgan_conv3x3(Graph& g, int x, const std::string& name, int64_t cout, int stride = 1);

// nn.GroupNorm(32, C, eps 1e-6, affine) (VQGAN's normalize), followed by swish in the same op
// when silu.
int vqgan_norm(Graph& g, int x, const std::string& name, bool silu);

// VQGAN's ResBlock: GroupNorm(32, eps 1e-6) + swish -> conv3x3 -> GroupNorm + swish -> conv3x3,
// plus x (through `shortcut`, a 1x1 conv, when the channel count changes: CodeFormer's conv_out,
// RestoreFormer's nin_shortcut).
int codeformer_resblock(Graph& g, int x, int64_t cout, const std::string& prefix, const char* shortcut = "conv_out");

// VQGAN's attention block on x [N, H, W, C]: GroupNorm(x) (weights `norm`) as the keys and values
// of a multi-head attention over the H x W positions, the q, k, v 1x1 convs as one in-projection
// (prefix.in_proj_weight / in_proj_bias), proj_out as the out-projection, plus x. The queries come
// from GroupNorm(x) too, or, given a query feature shaped as x, from GroupNorm(query) with the
// weights `query_norm` (RestoreFormer++'s decoder attending to the encoder's features).
int vqgan_attn_block(Graph& g, int x, int heads, const std::string& prefix, const std::string& norm, int query = -1,
                     const std::string& query_norm = "");

// Fuse_sft_block(C, C) on the encoder feature enc and the decoder feature dec [N, H, W, C]:
// ResBlock(2C -> C) of their concatenation, scale and shift branches (conv3x3, leaky 0.2,
// conv3x3) and the output dec + w * (dec * scale + shift).
int codeformer_fuse_block(Graph& g, int enc, int dec, float w, const std::string& prefix);

}  // namespace gpen
