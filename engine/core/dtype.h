#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gpen {

// i8 and f8e4m3 are 8-bit weight codes with per-output-channel scales (TensorView::qscale):
// weight = code * scale[o] (docs/weights-format.md, "8-bit weights").
enum class DType : uint8_t { f32 = 0, f16 = 1, bf16 = 2, i32 = 3, u8 = 4, i8 = 5, f8e4m3 = 6 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i32: return 4;
    case DType::u8: return 1;
    case DType::i8: return 1;
    case DType::f8e4m3: return 1;
  }
  return 0;
}

const char* dtype_name(DType t);
// Accepts "f32"/"fp32"/"float32", "f16"/"fp16"/"float16", "bf16"/"bfloat16", "i32", "u8",
// "i8"/"int8", "f8e4m3"/"fp8"/"e4m3".
DType parse_dtype(std::string_view s);
// The 8-bit weight code dtypes (i8, f8e4m3), which carry per-output-channel scales.
constexpr bool dtype_is_8bit_weight(DType t) { return t == DType::i8 || t == DType::f8e4m3; }

}  // namespace gpen
