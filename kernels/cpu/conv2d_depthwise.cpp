// Depthwise 3x3 conv (MobileNet's), NHWC: vectorised across channels, which are contiguous.
//
// A tile of output pixels of one row runs through all channels, a few vectors of 8 at a time: per
// tap, each weight vector loaded (from L1: 9 x C floats) serves every pixel of the tile, and the
// tile's input pixels are mostly reused by the next tile while still in L1. (Sweeping a whole
// row per channel block instead, weights held in registers, was slower from 64 channels on: the
// three input rows no longer fit in L1.) Tiles in the interior
// of the row (and in rows whose three input rows all exist) run with constant tap ranges, so the
// compiler unrolls the nine taps with no bounds checks; border pixels and rows run the same code
// with their valid tap ranges (padding taps are skipped, as the generic path skips them, so the
// sums are the same). The epilogue (bias, activation, residual) is applied in registers before
// the one store. Rows are spread over the OpenMP threads dynamically: the machine is shared, and
// a thread that is descheduled must not hold the others at the barrier. The tiles are compiled
// once per ISA (conv2d_depthwise_kernel.cpp: vectors of 8 or 16 channels, the same bits on both).
#include <omp.h>

#include <algorithm>

#include "kernels/cpu/conv2d_isa.h"
#include "kernels/cpu/conv2d_paths.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/strided.h"

#ifndef GPEN_HAVE_AVX512_KERNELS
#define GPEN_HAVE_AVX512_KERNELS 0
#endif

namespace gpen::cpu::detail {

bool depthwise3x3(const Conv2dParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
                  const TensorView* residual, const TensorView& y) {
  if (p.kh != 3 || p.kw != 3 || x.stride(3) != 1 || w.stride(3) != 1) return false;
  Dw d;
  d.x = x.f32();
  d.xs0 = x.stride(0), d.xs1 = x.stride(1), d.xs2 = x.stride(2);
  d.w = w.f32();
  d.ws0 = w.stride(0), d.ws1 = w.stride(1);
  d.bias = bias ? bias->f32() : nullptr;
  d.bs = bias ? bias->stride(0) : 0;
  d.o = conv_out(y, residual, p.act);
  d.H = x.dim(1), d.W = x.dim(2), d.C = x.dim(3), d.Ho = y.dim(1), d.Wo = y.dim(2);
  d.sh = p.stride_h, d.sw = p.stride_w, d.pt = p.pad_top, d.pl = p.pad_left;
  const int64_t rows = x.dim(0) * d.Ho;
  const int T = static_cast<int>(std::min<int64_t>(num_threads(), rows));
  // A few chunks per thread: enough to balance, few enough that scheduling costs nothing.
  const int64_t chunk = std::max<int64_t>(1, rows / (8 * std::max(T, 1)));
  // Tile shape, measured on Zen 3 with the inputs coming from L2/L3 as in a network: 4 pixels x
  // 16 channels for thin maps at stride 1; one pixel x 32 channels for 128+ channels or stride 2,
  // where a 4-pixel tile's input footprint (3 x 6 or 3 x 9 pixels of C floats) leaves L1. (The
  // AVX-512 copy keeps the shapes in vectors, so its tiles are twice as many channels wide.)
  const bool wide = d.C >= 128 || d.sw > 1;
#if GPEN_HAVE_AVX512_KERNELS
  auto row_fn = conv2d_wide() ? isa_avx512::depthwise3x3_row : isa_base::depthwise3x3_row;
#else
  auto row_fn = isa_base::depthwise3x3_row;
#endif
#pragma omp parallel for num_threads(T) if (T > 1) schedule(dynamic, chunk)
  for (int64_t r = 0; r < rows; ++r) row_fn(d, wide, r / d.Ho, r % d.Ho);
  return true;
}

}  // namespace gpen::cpu::detail
