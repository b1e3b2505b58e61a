#pragma once
// A small .npy reader and writer (NumPy format versions 1, 2 and 3; little-endian '<f4', '<f2',
// '<i4', '|u1' and '<i8'; C order). Used by tests and fixtures and by the CLI's .npy input and
// output. Every malformed file is a gpen::Error naming the path and what is wrong with it; sizes
// read from a header are checked against the file before anything is allocated.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/tensor.h"

namespace gpen::npy {

enum class ElemType : uint8_t { f4, f2, i4, u1, i8 };

size_t elem_size(ElemType t);
const char* elem_descr(ElemType t);  // "<f4", "<f2", "<i4", "|u1", "<i8"

struct Array {
  ElemType type = ElemType::f4;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  // little-endian elements, C order

  int64_t numel() const;
  // Typed access; throws gpen::Error when the stored element type is not T's.
  template <class T>
  const T* data() const;
  template <class T>
  T* data();
  // The shape as an engine Shape (rank <= kMaxRank, else gpen::Error).
  Shape engine_shape() const;
  // Every element converted to float (f2 widened, integers cast).
  std::vector<float> to_f32() const;
};

// Reads a whole .npy file.
Array load(const std::string& path);
// Parses .npy bytes already in memory; `name` is used in error messages.
Array parse(const void* data, size_t size, const std::string& name);
// Writes a .npy (version 1 header, or 2 when the header would not fit); `data` holds
// prod(shape) elements of `type`, little-endian, C order.
void save(const std::string& path, ElemType type, const std::vector<int64_t>& shape, const void* data);
void save(const std::string& path, const Array& a);
// Convenience: a float32 array, e.g. a tensor copied out of an engine buffer.
void save_f32(const std::string& path, const std::vector<int64_t>& shape, const float* data);
// The serialised bytes of an array (what save writes).
std::vector<uint8_t> serialize(ElemType type, const std::vector<int64_t>& shape, const void* data);

}  // namespace gpen::npy
