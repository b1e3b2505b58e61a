// The epilogue of conv2d's generic paths: act(acc + bias) + residual from the accumulator tile into
// the output, through its strides (the residual may be the output itself). Unit-stride rows go to
// the per-ISA epilogue_row (conv2d_isa.h).
#include "kernels/cpu/conv2d_isa.h"
#include "kernels/cpu/conv2d_paths.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/strided.h"

#ifndef GPEN_HAVE_AVX512_KERNELS
#define GPEN_HAVE_AVX512_KERNELS 0
#endif

namespace gpen::cpu::detail {

bool conv2d_wide() { return GPEN_HAVE_AVX512_KERNELS && cpu_isa() == Isa::avx512; }

void epilogue(const Args& a, int64_t p0, int64_t m, int64_t co0, int64_t nc, const float* acc) {
  const Activation act = a.p->act;
  const TensorView& y = *a.y;
  const float* bias = a.bias ? a.bias->f32() + co0 * a.bias->stride(0) : nullptr;
  const int64_t bs = a.bias ? a.bias->stride(0) : 0;
  const bool unit = y.stride(3) == 1 && (!a.bias || bs == 1) && (!a.res || a.res->stride(3) == 1);
  // The rows run on the ISA's vectors (conv2d_epilogue_kernel.cpp); the result is the same on both.
#if GPEN_HAVE_AVX512_KERNELS
  auto row_fn = conv2d_wide() ? isa_avx512::epilogue_row : isa_base::epilogue_row;
#else
  auto row_fn = isa_base::epilogue_row;
#endif
  PixelCursor cur(p0, a.g.Ho, a.g.Wo);
  for (int64_t i = 0; i < m; ++i, cur.next()) {
    const float* src = acc + i * nc;
    float* dst = y.f32() + cur.n * y.stride(0) + cur.oy * y.stride(1) + cur.ox * y.stride(2) + co0 * y.stride(3);
    const float* r = a.res ? a.res->f32() + cur.n * a.res->stride(0) + cur.oy * a.res->stride(1) +
                                 cur.ox * a.res->stride(2) + co0 * a.res->stride(3)
                           : nullptr;
    if (unit) {
      row_fn(dst, src, bias, r, nc, act.slope, act.gain);
    } else {
      const int64_t ys = y.stride(3), rs = a.res ? a.res->stride(3) : 0;
      for (int64_t c = 0; c < nc; ++c) {
        float v = src[c] + (bias ? bias[c * bs] : 0.0f);
        v = act(v);
        dst[c * ys] = r ? v + r[c * rs] : v;
      }
    }
  }
}

}  // namespace gpen::cpu::detail
