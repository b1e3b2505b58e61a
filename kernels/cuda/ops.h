#pragma once
// CUDA kernels, one function per op, the twins of kernels/cpu/ops.h: the same parameter structs
// (kernels/params.h) and TensorViews, whose data pointers are device pointers here, plus the
// stream the work is queued on. Kernels never allocate and never synchronise: scratch memory
// comes in as `workspace` (sized by the matching *_workspace_bytes), and errors in the arguments
// are gpen::Error thrown before anything is queued. A failed launch is a gpen::Error too.
//
// Element types: f32, f16 and bf16; all tensors of one call share the dtype, arithmetic is in
// f32 (tensor cores: f16/bf16 products accumulated in f32). Activations are NHWC, conv weights
// HWIO [kh][kw][cin/groups][cout] and dense weights [out][in], both contiguous; every other
// view may be strided (channel slices in and out).
//
// Builds: nvcc compiles these into gpen_kernels (inline namespace native); the tests also compile
// them as C++ for the host emulator (inline namespace emu), see kernels/cuda/abi.h.
#include <cstddef>

#include "engine/core/tensor.h"
#include "kernels/cuda/abi.h"
#include "kernels/params.h"

struct CUstream_st;  // cudaStream_t is CUstream_st*, in CUDA and in the emulator

GPEN_CUDA_NAMESPACE_BEGIN

using Stream = CUstream_st*;

// Which conv2d kernel runs. automatic: depthwise when groups == cin == cout (> 1), tensor cores
// for f16/bf16 (mma.sync by default, WMMA with GPEN_CUDA_GEMM=wmma or where mma.sync does not take
// the shape: ops_gemm.h), the SIMT kernel for f32. Forcing one is for tests and benchmarks;
// tensor_core needs f16/bf16, depthwise needs groups == cin == cout.
enum class ConvAlgo { automatic, tensor_core, simt, depthwise };

// conv2d: x [N,H,W,Cin], w HWIO, bias [Cout], residual like y; y [N,Ho,Wo,Cout] (may be a slice);
// y = act(conv(x, w) + bias) + residual. Workspace: 0, except for deep GEMMs with too few output
// tiles to fill the GPU, which split their depth (kernels/cuda/splitk.cuh) and need
// [splits][M][Cout] f32 partial sums; it depends only on the shapes.
size_t conv2d_workspace_bytes(const Conv2dParams& p, const Shape& x, const Shape& y);
void conv2d(const Conv2dParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
            const TensorView* residual, const TensorView& y, void* workspace, Stream stream,
            ConvAlgo algo = ConvAlgo::automatic);

// dense: x [N, in], w [out, in], bias [out]; y [N, out].
void dense(const DenseParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
           const TensorView& y, Stream stream);

// bias_act over the last axis; x and y may be the same memory.
void bias_act(const BiasActParams& p, const TensorView& x, const TensorView* bias, const TensorView& y,
              Stream stream);

// add; a (or b) and y may be the same memory.
void add(const AddParams& p, const TensorView& a, const TensorView& b, const TensorView& y, Stream stream);

void resize_nearest(const ResizeNearestParams& p, const TensorView& x, const TensorView& y, Stream stream);

// Pixel unshuffle (space-to-depth) in PyTorch's channel order, as cpu::pixel_unshuffle (a copy:
// bit-identical in every dtype). kernels/cuda/pixel_unshuffle.cu.
void pixel_unshuffle(const PixelUnshuffleParams& p, const TensorView& x, const TensorView& y, Stream stream);

// upfirdn2d, with the optional epilogue of UpFirDn2dParams (out_scale [N, C], bias [C], act)
// applied in the same pass. Needs no workspace (returns 0).
size_t upfirdn2d_workspace_bytes(const UpFirDn2dParams& p, const Shape& x, const Shape& y);
void upfirdn2d(const UpFirDn2dParams& p, const TensorView& x, const TensorView* out_scale, const TensorView* bias,
               const TensorView& y, void* workspace, Stream stream);

// softmax over the last axis; x and y may be the same memory.
void softmax(const SoftmaxParams& p, const TensorView& x, const TensorView& y, Stream stream);

GPEN_CUDA_NAMESPACE_END
