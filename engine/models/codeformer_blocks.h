#pragma once
// Building blocks of CodeFormer's graph on the transformer ops (kernels/params.h), with the
// official module's parameter names under a prefix, weights f32 in the engine's layouts (conv
// weights HWIO).
#include <string>

#include "engine/graph/graph.h"

namespace gpen {

// VQGAN's ResBlock: GroupNorm(32, eps 1e-6) + swish -> conv3x3 -> GroupNorm + swish -> conv3x3,
// plus x (through conv_out, a 1x1 conv, when the channel count changes).
int codeformer_resblock(Graph& g, int x, int64_t cout, const std::string& prefix);

// Fuse_sft_block(C, C) on the encoder feature enc and the decoder feature dec [N, H, W, C]:
// ResBlock(2C -> C) of their concatenation, scale and shift branches (conv3x3, leaky 0.2,
// conv3x3) and the output dec + w * (dec * scale + shift).
int codeformer_fuse_block(Graph& g, int enc, int dec, float w, const std::string& prefix);

}  // namespace gpen
