#include "weights/quant8.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"

namespace gpen {

namespace {

void check(int64_t n, int64_t cout, DType dt) {
  GPEN_CHECK(dtype_is_8bit_weight(dt), std::string("quantize8: ") + dtype_name(dt) + " is not an 8-bit weight dtype");
  GPEN_CHECK(cout > 0 && n % cout == 0, "quantize8: " + std::to_string(n) + " values do not split into " +
                                            std::to_string(cout) + " output channels");
}

// The 127 non-negative finite e4m3 values, increasing with the code (0x00 .. 0x7e).
const std::vector<float>& e4m3_table() {
  static const std::vector<float> t = [] {
    std::vector<float> v(127);
    for (int c = 0; c < 127; ++c) v[static_cast<size_t>(c)] = f8e4m3_to_f32(static_cast<uint8_t>(c));
    return v;
  }();
  return t;
}

}  // namespace

namespace {
uint8_t e4m3_of(double v) {
  const uint8_t sign = std::signbit(v) ? 0x80 : 0;
  const double a = std::fabs(v);
  if (std::isnan(v)) return 0;  // the converter never sees NaN weights (checked before); be safe
  const auto& t = e4m3_table();
  if (a >= t.back()) return sign | 0x7e;
  // First value >= a; the answer is it or the one below.
  const size_t hi = static_cast<size_t>(std::lower_bound(t.begin(), t.end(), a) - t.begin());
  if (hi == 0) return 0;  // a == 0 (no negative zero: the codes of zero weights are all 0)
  const size_t lo = hi - 1;
  const double dl = a - t[lo], dh = t[hi] - a;
  size_t c = dl < dh ? lo : dh < dl ? hi : (lo % 2 == 0 ? lo : hi);  // tie: even mantissa
  if (c == 0) return 0;  // no negative zero: the codes of zero weights are all 0
  return static_cast<uint8_t>(sign | c);
}
// The 8-bit code of w under scale s: int8 rounded to nearest (ties to even) and clamped to
// +-127 (symmetric), or e4m3 of w / s; a zero scale (an all-zero channel) codes 0.
uint8_t code_of(float w, float s, DType dt) {
  const double r = s > 0.0f ? static_cast<double>(w) / s : 0.0;
  if (dt == DType::i8) return static_cast<uint8_t>(static_cast<int8_t>(std::clamp(std::nearbyint(r), -127.0, 127.0)));
  return e4m3_of(r);
}

}  // namespace

uint8_t f32_to_f8e4m3(float v) { return e4m3_of(v); }

std::vector<float> quantize8_scales(const float* w, int64_t n, int64_t cout, DType dt) {
  check(n, cout, dt);
  std::vector<float> amax(static_cast<size_t>(cout), 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    float& m = amax[static_cast<size_t>(i % cout)];
    m = std::max(m, std::fabs(w[i]));
  }
  const double top = dt == DType::i8 ? kI8Max : kF8e4m3Max;
  for (float& m : amax) m = static_cast<float>(m / top);
  return amax;
}

Quantized8 quantize8(const float* w, int64_t n, int64_t cout, DType dt) {
  Quantized8 q;
  q.scale = quantize8_scales(w, n, cout, dt);
  q.codes.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    q.codes[static_cast<size_t>(i)] = code_of(w[i], q.scale[static_cast<size_t>(i % cout)], dt);
  }
  return q;
}

std::vector<float> dequantize8(const uint8_t* codes, const float* scale, int64_t n, int64_t cout, DType dt) {
  check(n, cout, dt);
  std::vector<float> r(static_cast<size_t>(n));
  const bool fp8 = dt == DType::f8e4m3;
  for (int64_t i = 0; i < n; ++i) r[static_cast<size_t>(i)] = q8_dequant(codes[i], fp8, scale[i % cout]);
  return r;
}

}  // namespace gpen

namespace gpen {

Q8Axes q8_axes(const Shape& w) {
  Q8Axes a;
  if (w.rank == 0) return a;
  if (w.rank == 2) {
    a.out = w[0];
    a.k = w[1];
    a.out_first = true;
  } else {
    a.out = w[w.rank - 1];
    a.k = a.out > 0 ? w.numel() / a.out : 0;
  }
  return a;
}

int64_t q8_group_for(int64_t k, int64_t request) {
  if (request <= 0 || request >= k) return 0;
  const int64_t groups = (k + request - 1) / request;
  return (k + groups - 1) / groups;
}

Shape q8_scale_shape(const Shape& w, int64_t group) {
  const Q8Axes a = q8_axes(w);
  if (group <= 0) return Shape{a.out};
  return Shape{(a.k + group - 1) / group, a.out};
}

bool q8_group_of(const Shape& w, const Shape& scale, int64_t* group) {
  const Q8Axes a = q8_axes(w);
  if (scale.rank == 1 && scale[0] == a.out) {
    *group = 0;
    return true;
  }
  if (scale.rank != 2 || scale[1] != a.out || scale[0] < 1 || scale[0] > a.k) return false;
  const int64_t g = scale[0];
  const int64_t size = (a.k + g - 1) / g;
  if ((a.k + size - 1) / size != g) return false;
  *group = g == 1 ? 0 : size;
  return true;
}

std::string q8_scale_expectation(const Shape& w) {
  const Q8Axes a = q8_axes(w);
  return "f32 [" + std::to_string(a.out) + "] (per output channel) or [G, " + std::to_string(a.out) +
         "] (per group of ceil(" + std::to_string(a.k) + " / G) reduction rows)";
}

namespace {
// Element i of a contiguous weight as (reduction row, output channel).
inline void q8_coords(const Q8Axes& a, int64_t i, int64_t& k, int64_t& o) {
  if (a.out_first) {
    o = i / a.k;
    k = i - o * a.k;
  } else {
    k = i / a.out;
    o = i - k * a.out;
  }
}
}  // namespace

Quantized8Grouped quantize8_grouped(const float* w, const Shape& shape, DType dt, int64_t request) {
  const Q8Axes a = q8_axes(shape);
  const int64_t n = shape.numel();
  check(n, a.out, dt);
  Quantized8Grouped q;
  q.group = q8_group_for(a.k, request);
  const int64_t groups = q.group > 0 ? (a.k + q.group - 1) / q.group : 1;
  q.scale.assign(static_cast<size_t>(groups * a.out), 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    int64_t k, o;
    q8_coords(a, i, k, o);
    float& m = q.scale[static_cast<size_t>(q8_scale_index(k, o, a.out, q.group))];
    m = std::max(m, std::fabs(w[i]));
  }
  const double top = dt == DType::i8 ? kI8Max : kF8e4m3Max;
  for (float& m : q.scale) m = static_cast<float>(m / top);
  q.codes.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t k, o;
    q8_coords(a, i, k, o);
    q.codes[static_cast<size_t>(i)] =
        code_of(w[i], q.scale[static_cast<size_t>(q8_scale_index(k, o, a.out, q.group))], dt);
  }
  return q;
}

std::vector<float> dequantize8_grouped(const uint8_t* codes, const float* scale, const Shape& shape, DType dt,
                                       int64_t group) {
  const Q8Axes a = q8_axes(shape);
  const int64_t n = shape.numel();
  check(n, a.out, dt);
  std::vector<float> r(static_cast<size_t>(n));
  const bool fp8 = dt == DType::f8e4m3;
  for (int64_t i = 0; i < n; ++i) {
    int64_t k, o;
    q8_coords(a, i, k, o);
    r[static_cast<size_t>(i)] = q8_dequant(codes[i], fp8, scale[q8_scale_index(k, o, a.out, group)]);
  }
  return r;
}

}  // namespace gpen
