#pragma once
// Helpers for the test_cuda_* tests: device buffers, tensors mirrored on host and device, and
// tolerance checks. Everything goes through the CUDA runtime API, so the same tests run on the
// emulator and natively on a GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/tensor.h"
#include "kernels/cuda/compat.h"
#include "tests/cuda_emu/fp16_bits.h"

namespace cuda_test {

inline void cuda_ok(cudaError_t e, const char* what) {
  const std::string message = std::string(what) + ": " + cudaGetErrorString(e);
  INFO(message);
  REQUIRE(e == cudaSuccess);
}

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) { cuda_ok(cudaMalloc(&p_, std::max<size_t>(bytes, 1)), "cudaMalloc"); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(o.bytes_) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~DeviceBuffer() {
    if (p_) cudaFree(p_);
  }
  void* get() const { return p_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  size_t bytes() const { return bytes_; }

  template <class T>
  void upload(const std::vector<T>& v) {
    REQUIRE(v.size() * sizeof(T) <= bytes_);
    cuda_ok(cudaMemcpy(p_, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  template <class T>
  std::vector<T> download(size_t n) const {
    REQUIRE(n * sizeof(T) <= bytes_);
    std::vector<T> v(n);
    cuda_ok(cudaMemcpy(v.data(), p_, n * sizeof(T), cudaMemcpyDeviceToHost), "download");
    return v;
  }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

inline const char* dtype_label(gpen::DType dt) { return gpen::dtype_name(dt); }

// The value the device holds after storing f as dt.
inline float quantize(float f, gpen::DType dt) {
  switch (dt) {
    case gpen::DType::f16: return cuda_emu::round_to_half(f);
    case gpen::DType::bf16: return cuda_emu::round_to_bf16(f);
    default: return f;
  }
}

inline std::vector<float> random_values(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Floats in dt's storage format, and back.
inline std::vector<uint8_t> encode(const std::vector<float>& v, gpen::DType dt) {
  const size_t es = gpen::dtype_size(dt);
  std::vector<uint8_t> bytes(v.size() * es);
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == gpen::DType::f32) {
      std::memcpy(&bytes[i * 4], &v[i], 4);
    } else {
      const uint16_t b = dt == gpen::DType::f16 ? cuda_emu::float_to_half_bits(v[i]) : cuda_emu::float_to_bf16_bits(v[i]);
      std::memcpy(&bytes[i * 2], &b, 2);
    }
  }
  return bytes;
}

inline std::vector<float> decode(const std::vector<uint8_t>& bytes, gpen::DType dt) {
  const size_t es = gpen::dtype_size(dt);
  std::vector<float> v(bytes.size() / es);
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == gpen::DType::f32) {
      std::memcpy(&v[i], &bytes[i * 4], 4);
    } else {
      uint16_t b;
      std::memcpy(&b, &bytes[i * 2], 2);
      v[i] = dt == gpen::DType::f16 ? cuda_emu::half_bits_to_float(b) : cuda_emu::bf16_bits_to_float(b);
    }
  }
  return v;
}

// One tensor held twice: f32 on the host (what the CPU reference op reads and writes) and dt on
// the device (what the CUDA op sees), with identical values. With parent_last > 0 the tensor is
// the slice [offset_last, offset_last + shape[-1]) of the last axis of a parent whose last axis
// has parent_last entries; the whole parent is mirrored, so writes outside the slice show up.
struct TensorPair {
  gpen::Shape shape;
  gpen::DType dt = gpen::DType::f32;
  std::vector<float> host;  // the parent, f32
  DeviceBuffer dev;         // the parent, dt
  gpen::TensorView hv, dv;  // the tensor itself in each

  // The device parent as floats.
  std::vector<float> fetch() const { return decode(dev.download<uint8_t>(host.size() * gpen::dtype_size(dt)), dt); }
};

inline TensorPair make_pair(const gpen::Shape& shape, gpen::DType dt, uint32_t seed, float lo = -1.0f,
                            float hi = 1.0f, int64_t parent_last = 0, int64_t offset_last = 0) {
  TensorPair t;
  t.shape = shape;
  t.dt = dt;
  gpen::Shape parent = shape;
  if (parent_last > 0) {
    REQUIRE(shape.rank > 0);
    REQUIRE(offset_last + shape[shape.rank - 1] <= parent_last);
    parent[parent.rank - 1] = parent_last;
  } else {
    offset_last = 0;
  }
  t.host = random_values(static_cast<size_t>(parent.numel()), seed, lo, hi);
  for (float& v : t.host) v = quantize(v, dt);
  t.dev = DeviceBuffer(t.host.size() * gpen::dtype_size(dt));
  t.dev.upload(encode(t.host, dt));
  t.hv = gpen::make_view(t.host.data(), gpen::DType::f32, parent);
  t.hv.shape = shape;
  t.hv.data = t.host.data() + offset_last;
  t.dv = gpen::make_view(t.dev.get(), dt, parent);
  t.dv.shape = shape;
  t.dv.data = static_cast<char*>(t.dev.get()) + offset_last * static_cast<int64_t>(gpen::dtype_size(dt));
  return t;
}

struct Tolerance {
  double abs = 0;
  double rel = 0;
};

// Rounding the result to dt's precision can move it by one unit in the last place when an f32
// difference in summation order sits at a rounding boundary: 2^-10 relative for f16, 2^-7 for
// bf16 (one ulp), on top of the f32 tolerance `base`.
inline Tolerance output_tolerance(gpen::DType dt, Tolerance base) {
  if (dt == gpen::DType::f16) return {base.abs + 1e-6, base.rel + std::ldexp(1.0, -10)};
  if (dt == gpen::DType::bf16) return {base.abs + 1e-6, base.rel + std::ldexp(1.0, -7)};
  return base;
}

// Every element within abs + rel * |want|; reports the worst one.
inline void check_close(const std::vector<float>& got, const std::vector<float>& want, Tolerance tol,
                        const std::string& what) {
  REQUIRE(got.size() == want.size());
  size_t worst = 0, bad = 0;
  double worst_excess = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i];
    const double err = std::isnan(g) || std::isnan(w) ? INFINITY : std::fabs(g - w);
    const double allowed = tol.abs + tol.rel * std::fabs(w);
    if (err > allowed) ++bad;
    if (err - allowed > worst_excess) {
      worst_excess = err - allowed;
      worst = i;
    }
  }
  INFO(what << ": " << bad << " of " << got.size() << " elements out of tolerance (abs " << tol.abs << ", rel "
            << tol.rel << "); worst at " << worst << ": got " << got[worst] << ", want " << want[worst]);
  CHECK(bad == 0);
}

}  // namespace cuda_test
