#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gpen {

enum class DType : uint8_t { f32 = 0, f16 = 1, bf16 = 2, i32 = 3, u8 = 4 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i32: return 4;
    case DType::u8: return 1;
  }
  return 0;
}

const char* dtype_name(DType t);
// Accepts "f32"/"fp32"/"float32", "f16"/"fp16"/"float16", "bf16"/"bfloat16", "i32", "u8".
DType parse_dtype(std::string_view s);

}  // namespace gpen
