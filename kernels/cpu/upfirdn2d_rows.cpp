// The ISA dispatch of upfirdn2d's row kernels (upfirdn2d_kernel.h) and the horizontal pass for
// rows of a few channels, for kernels/cpu/upfirdn2d.cpp.
#include <algorithm>

#include "kernels/cpu/isa.h"
#include "kernels/params.h"
#include "kernels/cpu/upfirdn2d_kernel.h"

#ifndef GPEN_HAVE_AVX512_KERNELS
#define GPEN_HAVE_AVX512_KERNELS 0
#endif

namespace gpen::cpu::upfirdn2d_detail {

// dst[i] = (accumulate ? dst[i] : 0) + sum_t w[t] * src[t][i] for i < len, unit strides: the
// copy for the ISA in use (upfirdn2d_kernel.h).
void weighted_sum(float* dst, const float* const* src, const float* w, int nt, int64_t len, bool accumulate) {
  if (len < 16) {  // a few channels (RGB): the call into the other file would cost more than the sum
    for (int64_t i = 0; i < len; ++i) {
      float a = accumulate ? dst[i] : 0.0f;
      for (int t = 0; t < nt; ++t) a += w[t] * src[t][i];
      dst[i] = a;
    }
    return;
  }
#if GPEN_HAVE_AVX512_KERNELS
  if (cpu_isa() == Isa::avx512) return isa_avx512::weighted_sum(dst, src, w, nt, len, accumulate);
#endif
  isa_base::weighted_sum(dst, src, w, nt, len, accumulate);
}

bool weighted_sum_stream(float* dst, const float* const* src, const float* w, int nt, int64_t len,
                         const StreamEpilogue* ep) {
#if GPEN_HAVE_AVX512_KERNELS
  if (cpu_isa() == Isa::avx512) return isa_avx512::weighted_sum_stream(dst, src, w, nt, len, ep);
#endif
  return isa_base::weighted_sum_stream(dst, src, w, nt, len, ep);
}

void bias_act_rows(float* y, const float* sc, const float* b, int64_t C, int64_t npix, float gpos, float gneg) {
#if GPEN_HAVE_AVX512_KERNELS
  if (cpu_isa() == Isa::avx512) return isa_avx512::bias_act_rows(y, sc, b, C, npix, gpos, gneg);
#endif
  isa_base::bias_act_rows(y, sc, b, C, npix, gpos, gneg);
}

// The horizontal pass of an x-upsampling filter over a row of a few channels (to_rgb's skip
// upsample of the RGB image): pixel by pixel through TapSum it spent its time on the per-tap index
// divisions and the call, about 0.7 ms of GPEN-256's 128 -> 256 upsample. Output ox = r + up t of
// phase r sees the taps kx = kx0 + up j, which read input pixel i0 + t + j: no division in the
// loop. Same taps in the same order as TapSum's scalar sum, so the same bits.
// CC > 0: the channel count as a constant, so the per-pixel sums stay in registers (with a
// run-time count GCC turns them into memset / memcpy calls); 0: C at run time.
template <int64_t CC>
void few_channels_up_row_c(const UpFirDn2dParams& p, int64_t W, int64_t Wo, int64_t C_run, const float* fx,
                           const float* xrow, int64_t xs, float* h) {
  const int64_t up = p.up_x, C = CC > 0 ? CC : C_run;
  for (int64_t r = 0; r < std::min(up, Wo); ++r) {
    const int64_t kx0 = ((p.pad_x0 - r) % up + up) % up;
    const int64_t i0 = (r + kx0 - p.pad_x0) / up;  // exact: r + kx0 - pad_x0 is a multiple of up
    for (int64_t ox = r, t = 0; ox < Wo; ox += up, ++t) {
      float acc[kFewChannels] = {};
      for (int64_t kx = kx0, ix = i0 + t; kx < p.kw; kx += up, ++ix) {
        if (ix < 0 || ix >= W) continue;
        const float* src = xrow + ix * xs;
        for (int64_t c = 0; c < C; ++c) acc[c] += fx[kx] * src[c];
      }
      float* dst = h + ox * C;
      for (int64_t c = 0; c < C; ++c) dst[c] = acc[c];
    }
  }
}
void few_channels_up_row(const UpFirDn2dParams& p, int64_t W, int64_t Wo, int64_t C, const float* fx, const float* xrow,
                         int64_t xs, float* h) {
  switch (C) {
    case 1: return few_channels_up_row_c<1>(p, W, Wo, C, fx, xrow, xs, h);
    case 3: return few_channels_up_row_c<3>(p, W, Wo, C, fx, xrow, xs, h);
    case 4: return few_channels_up_row_c<4>(p, W, Wo, C, fx, xrow, xs, h);
    default: return few_channels_up_row_c<0>(p, W, Wo, C, fx, xrow, xs, h);
  }
}

}  // namespace gpen::cpu::upfirdn2d_detail
