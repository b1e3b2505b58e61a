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
    const float s = q.scale[static_cast<size_t>(i % cout)];
    const double r = s > 0.0f ? static_cast<double>(w[i]) / s : 0.0;
    if (dt == DType::i8) {
      const double c = std::clamp(std::nearbyint(r), -127.0, 127.0);  // default rounding: ties to even
      q.codes[static_cast<size_t>(i)] = static_cast<uint8_t>(static_cast<int8_t>(c));
    } else {
      q.codes[static_cast<size_t>(i)] = e4m3_of(r);
    }
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
