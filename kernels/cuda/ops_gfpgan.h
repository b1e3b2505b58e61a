#pragma once
// CUDA kernels of the GFPGAN ops, the twins of the cpu:: ops of the same names (kernels/cpu/ops.h):
// same parameter structs, inputs and semantics, device pointers in the views, a trailing stream.
// Conventions as in kernels/cuda/ops.h: f32, f16 or bf16 (all tensors of a call share the dtype,
// noise_weight included, read by the kernel, never by the host), arithmetic in f32, no
// allocation, no synchronisation, bad arguments are gpen::Error thrown before anything is queued.
#include "kernels/cuda/ops.h"

GPEN_CUDA_NAMESPACE_BEGIN

// F.interpolate(bilinear, align_corners=False) to p.out_h x p.out_w (kernels/cuda/resize_bilinear.cu).
void resize_bilinear(const ResizeBilinearParams& p, const TensorView& x, const TensorView& y, Stream stream);
// y = act(x * gain + noise_weight * noise[h, w] + bias[c]); may run in place (kernels/cuda/noise_bias_act.cu).
void noise_bias_act(const NoiseBiasActParams& p, const TensorView& x, const TensorView& noise,
                    const TensorView& noise_weight, const TensorView* bias, const TensorView& y, Stream stream);
// y = x * scale + shift on the channels from p.c0, x below; may run in place (kernels/cuda/sft.cu).
void sft(const SftParams& p, const TensorView& x, const TensorView& scale, const TensorView& shift, const TensorView& y,
         Stream stream);

GPEN_CUDA_NAMESPACE_END
