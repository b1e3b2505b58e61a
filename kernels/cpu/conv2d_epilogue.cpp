// The epilogue of conv2d's generic paths: act(acc + bias) + residual from the accumulator tile into
// the output, through its strides (the residual may be the output itself).
#include "kernels/cpu/conv2d_paths.h"
#include "kernels/cpu/strided.h"

namespace gpen::cpu::detail {

namespace {

template <bool kBias, bool kRes>
void epilogue_row(float* __restrict dst, const float* __restrict src, const float* __restrict bias,
                  const float* __restrict res, int64_t nc, float slope, float gain) {
  for (int64_t c = 0; c < nc; ++c) {
    float v = src[c];
    if constexpr (kBias) v += bias[c];
    v = act_branchless(v, slope, gain);
    if constexpr (kRes) v += res[c];
    dst[c] = v;
  }
}

}  // namespace

void epilogue(const Args& a, int64_t p0, int64_t m, int64_t co0, int64_t nc, const float* acc) {
  const Activation act = a.p->act;
  const TensorView& y = *a.y;
  const float* bias = a.bias ? a.bias->f32() + co0 * a.bias->stride(0) : nullptr;
  const int64_t bs = a.bias ? a.bias->stride(0) : 0;
  const bool unit = y.stride(3) == 1 && (!a.bias || bs == 1) && (!a.res || a.res->stride(3) == 1);
  PixelCursor cur(p0, a.g.Ho, a.g.Wo);
  for (int64_t i = 0; i < m; ++i, cur.next()) {
    const float* src = acc + i * nc;
    float* dst = y.f32() + cur.n * y.stride(0) + cur.oy * y.stride(1) + cur.ox * y.stride(2) + co0 * y.stride(3);
    const float* r = a.res ? a.res->f32() + cur.n * a.res->stride(0) + cur.oy * a.res->stride(1) +
                                 cur.ox * a.res->stride(2) + co0 * a.res->stride(3)
                           : nullptr;
    if (unit) {
      // The residual may be the output itself (y += conv(x)): element c is read before written,
      // but then the two must not be declared __restrict; route that case to the strided loop.
      if (r == dst) {
        for (int64_t c = 0; c < nc; ++c) dst[c] = act_branchless(src[c] + (bias ? bias[c] : 0.0f), act.slope, act.gain) + r[c];
      } else if (bias) {
        r ? epilogue_row<true, true>(dst, src, bias, r, nc, act.slope, act.gain)
          : epilogue_row<true, false>(dst, src, bias, r, nc, act.slope, act.gain);
      } else {
        r ? epilogue_row<false, true>(dst, src, bias, r, nc, act.slope, act.gain)
          : epilogue_row<false, false>(dst, src, bias, r, nc, act.slope, act.gain);
      }
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
