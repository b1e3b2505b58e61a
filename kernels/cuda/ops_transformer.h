#pragma once
// CUDA kernels of the transformer ops of CodeFormer and RestoreFormer++, the twins of the cpu::
// ops of the same names (kernels/cpu/ops.h): same parameter structs, inputs and semantics,
// device pointers in the views, a trailing stream. Conventions as in kernels/cuda/ops.h: f32, f16
// or bf16 (all float tensors of a call share the dtype; code_lookup's indices are i32),
// arithmetic in f32 (code_lookup's distances in double, as on the CPU), no allocation, no
// synchronisation, bad arguments are gpen::Error thrown before anything is queued.
#include "kernels/cuda/ops.h"

GPEN_CUDA_NAMESPACE_BEGIN

// GroupNorm (optionally + SiLU) on NHWC x; gamma, beta [C] or nullptr (kernels/cuda/norm.cu).
void group_norm(const GroupNormParams& p, const TensorView& x, const TensorView* gamma, const TensorView* beta,
                const TensorView& y, Stream stream);
// LayerNorm over the last axis; may run in place (kernels/cuda/norm.cu).
void layer_norm(const LayerNormParams& p, const TensorView& x, const TensorView* gamma, const TensorView* beta,
                const TensorView& y, Stream stream);
// Adaptive instance normalisation of x by style's statistics (kernels/cuda/norm.cu).
void adain(const AdaInParams& p, const TensorView& x, const TensorView& style, const TensorView& y, Stream stream);
// GELU (erf form) or SiLU; may run in place (kernels/cuda/smooth_act.cu).
void smooth_act(const SmoothActParams& p, const TensorView& x, const TensorView& y, Stream stream);
// Self- and cross-attention as cpu::attention (kernels/cuda/attention.cu). The workspace holds one
// sample's f32 q, k, v, scores [heads, L, L] and context; samples run one after another through it.
size_t attention_workspace_bytes(const AttentionParams& p, const Shape& x);
void attention(const AttentionParams& p, const AttentionArgs& a, const TensorView& y, void* workspace,
               Stream stream);
// Nearest codebook entry (argmax of logits or argmin of VQ distance), gathered; indices i32
// [N, H, W] (kernels/cuda/code_lookup.cu).
void code_lookup(const CodeLookupParams& p, const TensorView& z, const TensorView& codebook, const TensorView& y,
                 const TensorView& indices, Stream stream);
// y = dec + w * (dec * scale + shift); may run in place (kernels/cuda/sft.cu).
void fuse_sft(const FuseSftParams& p, const TensorView& dec, const TensorView& scale, const TensorView& shift,
              const TensorView& y, Stream stream);

GPEN_CUDA_NAMESPACE_END
