#include "engine/models/float_convert.h"

#include <cstdint>
#include <cstring>

#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "weights/half.h"

namespace gpen {

void floats_to(const float* src, void* dst, DType t, size_t n) {
  if (t == DType::f32) {
    std::memcpy(dst, src, n * 4);
    return;
  }
  uint16_t* d = static_cast<uint16_t*>(dst);
  size_t i = 0;
  if (t == DType::f16) {
#if defined(__F16C__)
    for (; i + 8 <= n; i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
#endif
    for (; i < n; ++i) d[i] = f32_to_f16(src[i]);
  } else {
    for (; i < n; ++i) d[i] = f32_to_bf16(src[i]);
  }
}

void floats_from(const void* src, DType t, float* dst, size_t n) {
  if (t == DType::f32) {
    std::memcpy(dst, src, n * 4);
    return;
  }
  const uint16_t* s = static_cast<const uint16_t*>(src);
  size_t i = 0;
  if (t == DType::f16) {
#if defined(__F16C__)
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
#endif
    for (; i < n; ++i) dst[i] = f16_to_f32(s[i]);
  } else {
    for (; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
  }
}

}  // namespace gpen
