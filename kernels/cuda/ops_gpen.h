#pragma once
// CUDA kernels of the GPEN (StyleGAN2 decoder) ops and max pooling, the twins of the cpu:: ops of
// the same names (kernels/cpu/ops.h): same parameter structs, same inputs and semantics, device
// pointers in the views, a trailing stream. Conventions as in kernels/cuda/ops.h: f32, f16 or
// bf16 (all tensors of a call share the dtype), arithmetic in f32, no allocation, no
// synchronisation, bad arguments are gpen::Error thrown before anything is queued.
#include <cstddef>

#include "kernels/cuda/ops.h"

GPEN_CUDA_NAMESPACE_BEGIN

// y = x * rsqrt(mean over the last axis of x^2 + 1e-8); any rank, any strides.
void pixel_norm(const PixelNormParams& p, const TensorView& x, const TensorView& y, Stream stream);

// d[n, o] = rsqrt(sum_i s[n, i]^2 * q[o, i] + 1e-8); s [N, Cin], q [Cout, Cin], d [N, Cout].
void demod(const DemodParams& p, const TensorView& s, const TensorView& q, const TensorView& d, Stream stream);

// modconv's inputs: gpen::ModConvArgs (kernels/params.h); x2_scale is a one-element device tensor
// (read by the kernel, never by the host).
using ModConvArgs = ::gpen::ModConvArgs;

// Needs no workspace (returns 0 after checking the shapes); kept for symmetry with the CPU op.
size_t modconv_workspace_bytes(const ModConvParams& p, const Shape& x_cat, const Shape& y);
// The weight must be contiguous HWIO (as for conv2d); every other view may be strided.
void modconv(const ModConvParams& p, const ModConvArgs& a, const TensorView& y, void* workspace, Stream stream);

// NHWC max pooling; padded taps never win, NaN propagates (as cpu::max_pool2d).
void max_pool2d(const MaxPool2dParams& p, const TensorView& x, const TensorView& y, Stream stream);
// Nearest upsample + reflection pad in one gather, any dtype, bit-identical to cpu::pad_reflect.
void pad_reflect(const PadReflectParams& p, const TensorView& x, const TensorView& y, Stream stream);

GPEN_CUDA_NAMESPACE_END
