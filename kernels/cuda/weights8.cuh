#pragma once
// 8-bit conv and dense weights on the GPU (DType::i8 / f8e4m3 with per-output-channel or
// per-group f32 scales, engine/core/quant8.h): the kernels' weight operand when the model's
// weights are quantised.
// The stagers read one code byte and its channel's scale and convert when they fill the B tile
// (f32 for the SIMT kernels, rounded once to T for the tensor-core ones), so the 8-bit weights
// are the only copy of those layers on the device.
#include <cstdint>
#include <string>

#include "engine/core/quant8.h"
#include "kernels/cuda/common.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

struct Weight8 {
  const uint8_t* codes = nullptr;  // null: the weight is T, not 8-bit
  const float* scale = nullptr;    // [cout] or [groups][cout] (TensorView::qgroup)
  bool fp8 = false;                // e4m3 codes, else int8
  int group = 0;                   // reduction rows per scale row; 0: one scale per channel
  int cout = 0;                    // output channels (the scale rows' length)
};

// The scales of reduction row k (HWIO: (ky * kw + kx) * cin + ci), indexed by output channel.
__device__ __forceinline__ const float* weight8_scales(const Weight8& w, int k) {
  return w.group > 0 ? w.scale + int64_t{k / w.group} * w.cout : w.scale;
}

// The dequantised weight at element `idx` (reduction row k) of output channel `co`, as f32.
__device__ __forceinline__ float weight8_at(const Weight8& w, int64_t idx, int k, int co) {
  return q8_dequant(w.codes[idx], w.fp8, weight8_scales(w, k)[co]);
}

// Host side: the Weight8 of an 8-bit view (checked), or an empty one for a float view.
inline Weight8 weight8_of(const TensorView& w, const char* op) {
  Weight8 r;
  if (!dtype_is_8bit_weight(w.dtype)) return r;
  GPEN_CHECK(w.data != nullptr || w.numel() == 0, std::string(op) + ": weight has no data");
  GPEN_CHECK(w.qscale != nullptr, std::string(op) + ": 8-bit weight without its scales (TensorView::qscale)");
  r.codes = static_cast<const uint8_t*>(w.data);
  r.scale = w.qscale;
  r.fp8 = w.dtype == DType::f8e4m3;
  r.group = static_cast<int>(w.qgroup);
  r.cout = static_cast<int>(w.rank() == 2 ? w.dim(0) : w.dim(w.rank() - 1));
  return r;
}

GPEN_CUDA_NAMESPACE_END
