#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "engine/core/dtype.h"
#include "engine/core/error.h"

namespace gpen {

constexpr int kMaxRank = 6;

// A shape of up to kMaxRank dimensions. Activations are NHWC (see docs/architecture.md).
struct Shape {
  int rank = 0;
  std::array<int64_t, kMaxRank> d{};

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) {
    GPEN_CHECK(dims.size() <= kMaxRank, "shape rank too large");
    for (int64_t v : dims) d[rank++] = v;
  }
  int64_t operator[](int i) const { return d[i]; }
  int64_t& operator[](int i) { return d[i]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= d[i];
    return n;
  }
  bool operator==(const Shape& o) const {
    if (rank != o.rank) return false;
    for (int i = 0; i < rank; ++i)
      if (d[i] != o.d[i]) return false;
    return true;
  }
  std::string str() const;
};

// Row-major strides (in elements) of a dense tensor of this shape.
std::array<int64_t, kMaxRank> dense_strides(const Shape& s);

// A non-owning view: the only thing kernels see. Strides are in elements, so a channel slice of
// an NHWC buffer is the parent's strides with the data pointer moved by the channel offset.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::f32;
  Shape shape;
  std::array<int64_t, kMaxRank> strides{};
  // 8-bit weight dtypes only (dtype_is_8bit_weight): f32 scales in the same memory space as data;
  // the weight at reduction row k of output channel o (HWIO: o the last axis, k the flat index of
  // the first three; dense [out][in]: o = axis 0, k = axis 1) is code * qscale[q8_scale_index(k,
  // o, O, qgroup)] (engine/core/quant8.h). qgroup 0: one scale per output channel; else one per
  // output channel and group of qgroup consecutive k. Null / 0 for every other dtype.
  const float* qscale = nullptr;
  int64_t qgroup = 0;

  int rank() const { return shape.rank; }
  int64_t dim(int i) const { return shape.d[i]; }
  int64_t stride(int i) const { return strides[i]; }
  int64_t numel() const { return shape.numel(); }
  bool contiguous() const;
  float* f32() const { return static_cast<float*>(data); }
  template <class T>
  T* as() const { return static_cast<T*>(data); }
};

TensorView make_view(void* data, DType dt, const Shape& s);

}  // namespace gpen
