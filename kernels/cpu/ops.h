#pragma once
// CPU reference kernels. Each is the numerical reference for its CUDA twin and is tested against
// PyTorch-computed fixtures (tests/reference/). Kernels never allocate: scratch memory comes in as
// `workspace`, sized by the matching *_workspace_bytes function, which the planner reports.
// All kernels honour the strides of their views (channel slices in and out).
// Workspace sizes depend on the thread count: a kernel must run with at most the `threads` its
// workspace was sized for (the executor checks this before every run). Outputs must not overlap
// inputs, except the elementwise ops (in place allowed) and a residual, which may be the output.
#include <cstddef>

#include "engine/core/tensor.h"
#include "kernels/cpu/conv_select.h"
#include "kernels/params.h"

namespace gpen::cpu {

// Number of threads the CPU kernels use (OpenMP); 0 means all cores.
void set_num_threads(int n);
int num_threads();

// conv2d: x [N,H,W,Cin] f32, w HWIO, bias [Cout], residual like y; y [N,Ho,Wo,Cout]. Runs the path
// `c` names (choose_conv's for these operands, conv_select.h); the workspace is that path's.
size_t conv2d_workspace_bytes(const ConvChoice& c, const Conv2dParams& p, const Shape& x, const Shape& y, int threads);
void conv2d(const ConvChoice& c, const Conv2dParams& p, const TensorView& x, const TensorView& w,
            const TensorView* bias, const TensorView* residual, const TensorView& y, void* workspace);
// The same with the path chosen here under `o` (tests, benchmarks; the workspace query from dense
// shapes, which sizes every view the conv may get).
size_t conv2d_workspace_bytes(const Conv2dParams& p, const Shape& x, const Shape& y, int threads,
                              const CpuOptions& o = {});
void conv2d(const Conv2dParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
            const TensorView* residual, const TensorView& y, void* workspace, const CpuOptions& o = {});

// dense: x [N, in], w [out, in], bias [out]; y [N, out].
void dense(const DenseParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
           const TensorView& y);

// bias_act over the last axis; x and y may be the same memory.
void bias_act(const BiasActParams& p, const TensorView& x, const TensorView* bias, const TensorView& y);

// add; a (or b) and y may be the same memory.
void add(const AddParams& p, const TensorView& a, const TensorView& b, const TensorView& y);

void resize_nearest(const ResizeNearestParams& p, const TensorView& x, const TensorView& y);

size_t upfirdn2d_workspace_bytes(const UpFirDn2dParams& p, const Shape& x, const Shape& y, int threads);
void upfirdn2d(const UpFirDn2dParams& p, const TensorView& x, const TensorView& y, void* workspace);

void softmax(const SoftmaxParams& p, const TensorView& x, const TensorView& y);

// pixel_unshuffle: x [N,H,W,C] f32; y [N,H/f,W/f,C*f*f] (kernels/cpu/pixel_unshuffle.cpp).
void pixel_unshuffle(const PixelUnshuffleParams& p, const TensorView& x, const TensorView& y);

// max_pool2d: x [N,H,W,C] f32; y [N,Ho,Wo,C] (kernels/cpu/pool.cpp).
void max_pool2d(const MaxPool2dParams& p, const TensorView& x, const TensorView& y);
// pad_reflect: x [N,H,W,C] f32; y [N, up H + 2 pad, up W + 2 pad, C] (kernels/cpu/pad_reflect.cpp).
void pad_reflect(const PadReflectParams& p, const TensorView& x, const TensorView& y);

// ---- GPEN ops (kernels/cpu/latent.cpp, kernels/cpu/modconv.cpp, kernels/cpu/epilogue.cpp)

void pixel_norm(const PixelNormParams& p, const TensorView& x, const TensorView& y);
void demod(const DemodParams& p, const TensorView& s, const TensorView& q, const TensorView& d);

// modconv: as conv2d, the path `c` names (choose_conv's), or one chosen here under `o`.
using ModConvArgs = ::gpen::ModConvArgs;  // kernels/params.h
size_t modconv_workspace_bytes(const ConvChoice& c, const ModConvParams& p, const Shape& x_cat, const Shape& y,
                               int threads);
void modconv(const ConvChoice& c, const ModConvParams& p, const ModConvArgs& a, const TensorView& y, void* workspace);
size_t modconv_workspace_bytes(const ModConvParams& p, const Shape& x_cat, const Shape& y, int threads,
                               const CpuOptions& o = {});
void modconv(const ModConvParams& p, const ModConvArgs& a, const TensorView& y, void* workspace,
             const CpuOptions& o = {});

// upfirdn2d followed by the optional epilogue of UpFirDn2dParams (out_scale [N, C], bias [C]).
void upfirdn2d_epilogue(const UpFirDn2dParams& p, const TensorView* out_scale, const TensorView* bias,
                        const TensorView& y);

// ---- GFPGAN ops (kernels/cpu/resize_bilinear.cpp, noise_bias_act.cpp, sft.cpp); each may run in
// place except resize_bilinear.

// resize_bilinear: x [N,H,W,C] f32; y [N,out_h,out_w,C] (F.interpolate bilinear, align_corners=False).
void resize_bilinear(const ResizeBilinearParams& p, const TensorView& x, const TensorView& y);
// noise_bias_act: x, y [N,H,W,C]; noise [H,W]; noise_weight [1]; bias [C] (optional).
void noise_bias_act(const NoiseBiasActParams& p, const TensorView& x, const TensorView& noise,
                    const TensorView& noise_weight, const TensorView* bias, const TensorView& y);
// sft: x, y [N,H,W,C]; scale, shift [N,H,W,C - c0].
void sft(const SftParams& p, const TensorView& x, const TensorView& scale, const TensorView& shift,
         const TensorView& y);

// ---- Transformer ops of CodeFormer and RestoreFormer++ (kernels/cpu/norm.cpp, smooth_act.cpp,
// attention.cpp, code_lookup.cpp, sft.cpp, position_embedding.cpp; kernels/params.h).

// group_norm: x, y [N,H,W,C]; gamma, beta [C] with affine (else nullptr). Not in place.
void group_norm(const GroupNormParams& p, const TensorView& x, const TensorView* gamma, const TensorView* beta,
                const TensorView& y);
// layer_norm over the last axis: x, y [..., C]; gamma, beta [C] with affine. May run in place.
void layer_norm(const LayerNormParams& p, const TensorView& x, const TensorView* gamma, const TensorView* beta,
                const TensorView& y);
// adain: content x, y [N,H,W,C]; style [N,H',W',C]. Not in place.
void adain(const AdaInParams& p, const TensorView& x, const TensorView& style, const TensorView& y);
// smooth_act (GELU / SiLU): any shape; may run in place.
void smooth_act(const SmoothActParams& p, const TensorView& x, const TensorView& y);
// attention: operands as in AttentionParams; y [N, L, E], not overlapping x or query. The workspace holds
// the transposed projections, the projected q, k, v, the [heads, L, L] scores and the GEMM
// packing buffers of `threads` threads.
using AttentionArgs = ::gpen::AttentionArgs;  // kernels/params.h
size_t attention_workspace_bytes(const AttentionParams& p, const Shape& x, int threads);
void attention(const AttentionParams& p, const AttentionArgs& a, const TensorView& y, void* workspace);
// code_lookup: z [N,H,W,K] logits (argmax) or [N,H,W,C] features (argmin); codebook [K, C];
// y [N,H,W,C]; indices [N,H,W] i32.
void code_lookup(const CodeLookupParams& p, const TensorView& z, const TensorView& codebook, const TensorView& y,
                 const TensorView& indices);
// fuse_sft: dec, scale, shift, y [N,H,W,C]; y may be dec.
void fuse_sft(const FuseSftParams& p, const TensorView& dec, const TensorView& scale, const TensorView& shift,
              const TensorView& y);
// The sine position embedding into y [H, W, 2 num_pos_feats] (plan time, on the host).
void position_embedding_sine(const PositionSineParams& p, const TensorView& y);

}  // namespace gpen::cpu
