// The modconv prologue and epilogue: the band of a task (x * s, and the noise input
// act2(x2 * scale + bias2) * s, the virtual concat) and the output rows act(acc * d + bias) + r.
#include <cstring>

#include "kernels/cpu/modconv_internal.h"

namespace gpen::cpu::modconv_detail {

namespace {

// Row helpers of the prologue and epilogue. The activation is applied as v * (v < 0 ? slope : 1)
// * gain, branch-free: its sign is data (noise), so a branch would mispredict half the time.
#if GPEN_MODCONV_AVX2
inline __m256 leaky_factor(__m256 v, __m256 pos, __m256 neg) {
  return _mm256_blendv_ps(pos, neg, _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ));
}
#endif

// dst[c] = src[c] * s[c]
void scale_row(float* dst, const float* src, const float* s, int64_t n) {
  int64_t c = 0;
#if GPEN_MODCONV_AVX2
  for (; c + 8 <= n; c += 8) _mm256_storeu_ps(dst + c, _mm256_mul_ps(_mm256_loadu_ps(src + c), _mm256_loadu_ps(s + c)));
#endif
  for (; c < n; ++c) dst[c] = src[c] * s[c];
}

// dst[c] = act2(src[c] * scale + b[c]) * s[c], with gs[c] = s[c] * gain.
void noise_row(float* dst, const float* src, float scale, const float* b, const float* gs, float slope, int64_t n) {
  int64_t c = 0;
#if GPEN_MODCONV_AVX2
  const __m256 vs = _mm256_set1_ps(scale), one = _mm256_set1_ps(1.0f), vsl = _mm256_set1_ps(slope);
  for (; c + 8 <= n; c += 8) {
    const __m256 t = _mm256_fmadd_ps(_mm256_loadu_ps(src + c), vs, _mm256_loadu_ps(b + c));
    _mm256_storeu_ps(dst + c, _mm256_mul_ps(_mm256_mul_ps(t, leaky_factor(t, one, vsl)), _mm256_loadu_ps(gs + c)));
  }
#endif
  for (; c < n; ++c) {
    const float t = src[c] * scale + b[c];
    dst[c] = t * (t < 0.0f ? slope : 1.0f) * gs[c];
  }
}

}  // namespace

void epilogue_row(float* y, const float* acc, const float* d, const float* b, const float* r, float gpos, float gneg,
                  int64_t n) {
  int64_t o = 0;
#if GPEN_MODCONV_AVX2
  const __m256 vp = _mm256_set1_ps(gpos), vn = _mm256_set1_ps(gneg);
  for (; o + 8 <= n; o += 8) {
    const __m256 v = _mm256_fmadd_ps(_mm256_loadu_ps(acc + o), _mm256_loadu_ps(d + o), _mm256_loadu_ps(b + o));
    __m256 out = _mm256_mul_ps(v, leaky_factor(v, vp, vn));
    if (r) out = _mm256_add_ps(out, _mm256_loadu_ps(r + o));
    _mm256_storeu_ps(y + o, out);
  }
#endif
  for (; o < n; ++o) {
    const float v = acc[o] * d[o] + b[o];
    y[o] = v * (v < 0.0f ? gneg : gpos) + (r ? r[o] : 0.0f);
  }
}

void fill_band(const Plan& pl, const ModConvParams& p, const Inputs& in, int64_t n, int64_t ry0, int64_t rx0,
               float* band, const float* sv, const float* b2v, const float* gs2, float* row) {
  const TensorView& x = in.x;
  const int64_t nx = x.dim(0) == 1 ? 0 : n;
  const float* xb = x.f32() + nx * x.stride(0);
  const int64_t xs3 = x.stride(3);
  const int64_t C = pl.C, C1 = pl.C1, C2 = pl.C2;
  const float sc2 = in.x2_scale, slope2 = p.x2_act.slope;
  for (int64_t r = 0; r < pl.band_h; ++r) {
    const int64_t iy = ry0 + r;
    for (int64_t col = 0; col < pl.band_w; ++col) {
      const int64_t ix = rx0 + col;
      float* dst = band + (r * pl.band_w + col) * pl.cs;
      if (iy < 0 || iy >= pl.H || ix < 0 || ix >= pl.W) {
        std::memset(dst, 0, sizeof(float) * C);
        continue;
      }
      const float* src = xb + iy * x.stride(1) + ix * x.stride(2);
      if (xs3 != 1) {
        for (int64_t c = 0; c < C1; ++c) row[c] = src[c * xs3];
        src = row;
      }
      scale_row(dst, src, sv, C1);
      if (C2 > 0) {
        const TensorView& x2 = *in.x2;
        const float* src2 = x2.f32() + n * x2.stride(0) + iy * x2.stride(1) + ix * x2.stride(2);
        const int64_t s3 = x2.stride(3);
        if (s3 != 1) {
          for (int64_t c = 0; c < C2; ++c) row[c] = src2[c * s3];
          src2 = row;
        }
        noise_row(dst + C1, src2, sc2, b2v, gs2, slope2, C2);
      }
    }
  }
}

}  // namespace gpen::cpu::modconv_detail
