#include "engine/core/tensor.h"

#include <sstream>

namespace gpen {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
    case DType::u8: return "u8";
    case DType::i8: return "i8";
    case DType::f8e4m3: return "f8e4m3";
  }
  return "?";
}

DType parse_dtype(std::string_view s) {
  if (s == "f32" || s == "fp32" || s == "float32") return DType::f32;
  if (s == "f16" || s == "fp16" || s == "float16" || s == "half") return DType::f16;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  if (s == "i32" || s == "int32") return DType::i32;
  if (s == "u8" || s == "uint8") return DType::u8;
  if (s == "i8" || s == "int8") return DType::i8;
  if (s == "f8e4m3" || s == "fp8" || s == "e4m3") return DType::f8e4m3;
  throw Error("unknown dtype '" + std::string(s) + "' (expected fp32, fp16, bf16, i32, u8, int8 or fp8)");
}

std::string Shape::str() const {
  std::ostringstream os;
  os << "[";
  for (int i = 0; i < rank; ++i) os << (i ? ", " : "") << d[i];
  os << "]";
  return os.str();
}

std::array<int64_t, kMaxRank> dense_strides(const Shape& s) {
  std::array<int64_t, kMaxRank> st{};
  int64_t acc = 1;
  for (int i = s.rank - 1; i >= 0; --i) {
    st[i] = acc;
    acc *= s.d[i];
  }
  return st;
}

bool TensorView::contiguous() const { return strides == dense_strides(shape); }

TensorView make_view(void* data, DType dt, const Shape& s) {
  TensorView v;
  v.data = data;
  v.dtype = dt;
  v.shape = s;
  v.strides = dense_strides(s);
  return v;
}

}  // namespace gpen
