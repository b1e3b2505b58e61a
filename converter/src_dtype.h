#pragma once
// Element types that can appear in a checkpoint (wider than the engine's DType: checkpoints also
// hold float64, int64 counters, bools...). Only floating types are converted into .gpw files.
#include <cstddef>
#include <cstdint>
#include <string>

namespace gpen::conv {

enum class SrcDType : uint8_t { f32, f16, bf16, f64, i64, i32, i16, i8, u8, boolean };

constexpr size_t src_dtype_size(SrcDType t) {
  switch (t) {
    case SrcDType::f64: case SrcDType::i64: return 8;
    case SrcDType::f32: case SrcDType::i32: return 4;
    case SrcDType::f16: case SrcDType::bf16: case SrcDType::i16: return 2;
    case SrcDType::i8: case SrcDType::u8: case SrcDType::boolean: return 1;
  }
  return 1;
}

constexpr bool src_dtype_is_float(SrcDType t) {
  return t == SrcDType::f32 || t == SrcDType::f16 || t == SrcDType::bf16 || t == SrcDType::f64;
}

// PyTorch-style names: "float32", "int64", ...
const char* src_dtype_name(SrcDType t);

}  // namespace gpen::conv
