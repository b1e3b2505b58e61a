// Direct NHWC conv for shapes a GEMM serves badly: few output channels (RetinaFace's 1x1 convs
// of 8..32 channels, its SSH 3x3 convs of 16, the heads of 4..20) or few input channels (the
// 3-channel stems). A GEMM there spends its time packing operands and running the narrow edges
// of its micro-kernel, and writes an accumulator tile that a second pass finishes.
//
// Here the weight is repacked once per call as a [K][Cp] matrix (K = kh * kw * cin, Cp = cout
// rounded up to 8, zero columns beyond cout) with the bias beside it. A register tile of NP
// output pixels x NV vectors of 8 output channels accumulates, for each depth index, NP
// broadcast input values times NV weight vectors; when the input's pixels are contiguous
// (channel stride 1, pixel stride cin) the kx taps and channels of one kernel row are a single
// run of input floats. Interior tiles run with the full tap ranges; border pixels with their
// valid ranges (padding taps skipped, as in the GEMM path's zeros). Bias, activation and the
// residual are applied in registers before the one store. Output rows go to the OpenMP threads
// dynamically. The tiles are compiled once per ISA (conv2d_direct_kernel.cpp: 8 or 16 lanes, the
// same bits on both).
#include <omp.h>

#include <algorithm>

#include "kernels/cpu/conv2d_isa.h"
#include "kernels/cpu/conv2d_paths.h"
#include "kernels/cpu/weights8.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/range_steal.h"

#ifndef GPEN_HAVE_AVX512_KERNELS
#define GPEN_HAVE_AVX512_KERNELS 0
#endif

namespace gpen::cpu::detail {

namespace {

int64_t round8(int64_t v) { return (v + 7) / 8 * 8; }

}  // namespace

size_t direct_conv_workspace_floats(int64_t depth, int64_t cout) {
  const int64_t cp = round8(cout);
  return static_cast<size_t>(depth * cp + cp);
}

void direct_conv(const Conv2dParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
                 const TensorView* residual, const TensorView& y, float* ws) {
  Dc d;
  d.H = x.dim(1), d.W = x.dim(2), d.Cin = x.dim(3), d.Ho = y.dim(1), d.Wo = y.dim(2), d.Co = y.dim(3);
  d.Cp = round8(d.Co);
  d.kh = p.kh, d.kw = p.kw, d.sh = p.stride_h, d.sw = p.stride_w, d.pt = p.pad_top, d.pl = p.pad_left;
  // Pack W[ky][kx][ci][co] (any strides) as rows k = (ky * kw + kx) * cin + ci of Cp floats.
  const int64_t K = int64_t{p.kh} * p.kw * d.Cin;
  float* wp = ws;
  for (int64_t ky = 0; ky < p.kh; ++ky)
    for (int64_t kx = 0; kx < p.kw; ++kx)
      for (int64_t ci = 0; ci < d.Cin; ++ci) {
        float* row = wp + ((ky * p.kw + kx) * d.Cin + ci) * d.Cp;
        load_weight_row(row, w, ky * w.stride(0) + kx * w.stride(1) + ci * w.stride(2), w.stride(3), 0, d.Cp, d.Co,
                        (ky * p.kw + kx) * d.Cin + ci);
      }
  if (bias) {
    float* bp = wp + K * d.Cp;
    for (int64_t co = 0; co < d.Cp; ++co) bp[co] = co < d.Co ? bias->f32()[co * bias->stride(0)] : 0.0f;
    d.bp = bp;
  }
  d.x = x.f32();
  d.xs0 = x.stride(0), d.xs1 = x.stride(1), d.xs2 = x.stride(2), d.xcs = x.stride(3);
  d.wp = wp;
  d.o = conv_out(y, residual, p.act);
  const bool contig = d.xcs == 1 && d.xs2 == d.Cin;
#if GPEN_HAVE_AVX512_KERNELS
  auto row_fn = conv2d_wide() ? isa_avx512::direct_row : isa_base::direct_row;
#else
  auto row_fn = isa_base::direct_row;
#endif
  const int64_t rows = x.dim(0) * d.Ho;
  const int T = static_cast<int>(std::min<int64_t>(num_threads(), rows));
  const int64_t chunk = std::max<int64_t>(1, rows / (8 * std::max(T, 1)));
  const int64_t nchunk = (rows + chunk - 1) / chunk;
  // Chunks of rows, each thread from its own share of the image (range_steal.h).
  RangeSteal tasks;
  tasks.reset(nchunk, T);
#pragma omp parallel num_threads(T) if (T > 1)
  {
    const int me = omp_get_thread_num();
    for (int64_t c; (c = tasks.next(me)) >= 0;)
      for (int64_t r = c * chunk; r < std::min(rows, (c + 1) * chunk); ++r) row_fn(d, contig, r / d.Ho, r % d.Ho);
  }
}

}  // namespace gpen::cpu::detail
