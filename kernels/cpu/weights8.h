#pragma once
// Internal to the CPU kernels: reading 8-bit conv weights (DType::i8 / f8e4m3 with per-output-
// channel scales, engine/core/quant8.h) where the GEMMs load or pack their weight operand. The
// dequantised value is q8_dequant(code, fp8, scale[o]), one f32 multiply, so a kernel fed 8-bit
// weights computes exactly what it computes on the f32 weights dequantise8() returns: same
// packed panels, same products, same order.
#include <cstdint>
#include <string>

#include "engine/core/error.h"
#include "engine/core/quant8.h"
#include "engine/core/tensor.h"

namespace gpen::cpu::detail {

// f32, or 8-bit with its scales; `op` names the kernel in the message.
inline void check_weight_f32_or_8bit(const TensorView& w, const char* op) {
  if (dtype_is_8bit_weight(w.dtype)) {
    GPEN_CHECK(w.qscale != nullptr, std::string(op) + ": 8-bit weight without its scales (TensorView::qscale)");
    return;
  }
  GPEN_CHECK(w.dtype == DType::f32,
             std::string(op) + ": weight must be f32, i8 or f8e4m3 on the CPU, got " + dtype_name(w.dtype));
}

// The scales of reduction row k (HWIO: (ky * kw + kx) * cin + ci) of an 8-bit conv weight, indexed
// by output channel: per channel, or that row's group (TensorView::qgroup).
inline const float* weight8_scales(const TensorView& w, int64_t k) {
  return w.qscale + q8_scale_index(k, 0, w.dim(w.rank() - 1), w.qgroup);
}

// dst[q] = weight[o0 + q] for q < n (zero for o0 + q >= cout) from element `base` of w along the
// output axis with stride s3, `base` on reduction row k; f32 or 8-bit.
inline void load_weight_row(float* dst, const TensorView& w, int64_t base, int64_t s3, int64_t o0, int64_t n,
                            int64_t cout, int64_t k) {
  if (dtype_is_8bit_weight(w.dtype)) {
    const uint8_t* src = w.as<const uint8_t>() + base;
    const bool fp8 = w.dtype == DType::f8e4m3;
    const float* sc = weight8_scales(w, k);
    if (!fp8 && s3 == 1 && o0 + n <= cout) {
      // A whole run of int8 codes: the same products as q8_dequant, in a loop the compiler
      // vectorises (the low-memory mode dequantises every tile this way).
      const int8_t* c8 = reinterpret_cast<const int8_t*>(src);
      const float* so = sc + o0;
      for (int64_t q = 0; q < n; ++q) dst[q] = static_cast<float>(c8[q]) * so[q];
      return;
    }
    for (int64_t q = 0; q < n; ++q) dst[q] = o0 + q < cout ? q8_dequant(src[q * s3], fp8, sc[o0 + q]) : 0.0f;
    return;
  }
  const float* src = w.f32() + base;
  for (int64_t q = 0; q < n; ++q) dst[q] = o0 + q < cout ? src[q * s3] : 0.0f;
}

}  // namespace gpen::cpu::detail
