#pragma once
// What the per-architecture conversion files share: reading a checkpoint tensor by name, OIHW ->
// HWIO, and declaring a computed output tensor on the writer (converter/convert.cpp,
// converter/convert_gfpgan.cpp).
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "converter/checkpoint.h"
#include "converter/layouts.h"
#include "engine/core/error.h"
#include "engine/core/tensor.h"
#include "weights/gpw_writer.h"

namespace gpen::conv::convert_detail {

inline bool ends_with(const std::string& s, const char* suf) {
  size_t n = std::strlen(suf);
  return s.size() >= n && s.compare(s.size() - n, n, suf) == 0;
}

inline Shape to_shape(std::initializer_list<int64_t> d) { return Shape(d); }

// OIHW [O][I][K][K] -> HWIO [K][K][I][O], times `scale` (per output channel when `per_out` is set).
inline std::vector<float> to_hwio(const std::vector<float>& w, int64_t O, int64_t I, int64_t K, float scale,
                                     const std::vector<double>* per_out = nullptr) {
  std::vector<float> r(w.size());
  for (int64_t o = 0; o < O; ++o) {
    const float so = per_out ? static_cast<float>((*per_out)[static_cast<size_t>(o)]) : scale;
    for (int64_t i = 0; i < I; ++i)
      for (int64_t y = 0; y < K; ++y)
        for (int64_t x = 0; x < K; ++x) {
          float v = w[static_cast<size_t>(((o * I + i) * K + y) * K + x)];
          r[static_cast<size_t>(((y * K + x) * I + i) * O + o)] = per_out ? static_cast<float>(v * (*per_out)[o]) : v * so;
        }
  }
  return r;
}

// Rows of C channels x 4x4 pixels in PyTorch's (c, y, x) order -> the engine's NHWC (y, x, c),
// times `scale`: the constant input (one row) and the final linear's columns (one row per output).
inline std::vector<float> chw4x4_to_hwc(const std::vector<float>& v, int64_t rows, int64_t C, float scale = 1.0f) {
  std::vector<float> r(v.size());
  const int64_t row = C * 16;
  for (int64_t o = 0; o < rows; ++o)
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t p = 0; p < 16; ++p)
        r[static_cast<size_t>(o * row + p * C + ch)] = v[static_cast<size_t>(o * row + ch * 16 + p)] * scale;
  return r;
}

// Collects the checkpoint's tensors by name for the fillers, which run later, during write().
struct Src {
  const Checkpoint& ck;
  const SourceTensor& operator[](const std::string& n) const {
    const SourceTensor* t = ck.find(n);
    if (!t) throw Error(ck.name() + ": missing tensor '" + n + "'");
    return *t;
  }
  std::vector<float> f32(const std::string& n) const { return ck.read_f32((*this)[n]); }
};

// Output-side helper: a float tensor computed by `make` and stored as `dt`.
inline void add_computed(GpwWriter& w, const std::string& name, DType dt, const Shape& shape,
                         std::function<std::vector<float>()> make) {
  w.add(name, dt, shape, [name, dt, shape, make = std::move(make)](void* dst, size_t bytes) {
    std::vector<float> v = make();
    if (static_cast<int64_t>(v.size()) != shape.numel() || v.size() * dtype_size(dt) != bytes)
      throw Error("internal: size mismatch converting '" + name + "'");
    store_f32_as(dt, v.data(), v.size(), dst);
  });
}

// GFPGANv1Clean (converter/convert_gfpgan.cpp).
void plan_gfpgan(const Checkpoint& ck, const Recognition& rec, DType wdt, GpwWriter& w);
// CodeFormer (converter/convert_codeformer.cpp).
void plan_codeformer(const Checkpoint& ck, const Recognition& rec, DType wdt, GpwWriter& w);
// RestoreFormer++ and RestoreFormer (converter/convert_restoreformer.cpp).
void plan_restoreformer(const Checkpoint& ck, const Recognition& rec, DType wdt, GpwWriter& w);

}  // namespace gpen::conv::convert_detail
