#pragma once
// __half and __nv_bfloat16 for the host emulator: 16-bit storage with the conversions and operators
// that cuda_fp16.h / cuda_bf16.h give kernel code. Conversions round to nearest even like the
// hardware; each arithmetic operator computes in float and rounds once, which is exactly rounded
// for + - * / because float has more than twice the precision of either type plus two bits.
#include <cstdint>

#include "fp16_bits.h"

struct __half_raw {
  unsigned short x;
};

struct __nv_bfloat16_raw {
  unsigned short x;
};

struct __half {
  unsigned short __x;

  __half() = default;
  __half(const __half_raw& r) : __x(r.x) {}
  __half(float f) : __x(cuda_emu::float_to_half_bits(f)) {}
  __half(double f) : __x(cuda_emu::float_to_half_bits(static_cast<float>(f))) {}
  __half(int v) : __x(cuda_emu::float_to_half_bits(static_cast<float>(v))) {}
  operator float() const { return cuda_emu::half_bits_to_float(__x); }
  operator __half_raw() const { return {__x}; }
};

struct __nv_bfloat16 {
  unsigned short __x;

  __nv_bfloat16() = default;
  __nv_bfloat16(const __nv_bfloat16_raw& r) : __x(r.x) {}
  __nv_bfloat16(float f) : __x(cuda_emu::float_to_bf16_bits(f)) {}
  __nv_bfloat16(double f) : __x(cuda_emu::float_to_bf16_bits(static_cast<float>(f))) {}
  __nv_bfloat16(int v) : __x(cuda_emu::float_to_bf16_bits(static_cast<float>(v))) {}
  operator float() const { return cuda_emu::bf16_bits_to_float(__x); }
  operator __nv_bfloat16_raw() const { return {__x}; }
};

typedef __half half;
typedef __nv_bfloat16 nv_bfloat16;

inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline float __half2float(__half h) { return static_cast<float>(h); }
inline __half __ushort_as_half(unsigned short u) { return __half(__half_raw{u}); }
inline unsigned short __half_as_ushort(__half h) { return h.__x; }

inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 b) { return static_cast<float>(b); }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { return __nv_bfloat16(__nv_bfloat16_raw{u}); }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.__x; }

// Operators as cuda_fp16.hpp / cuda_bf16.hpp define them for device code: both operands of the
// 16-bit type, result rounded to it.
#define CUDA_EMU_HALF_OPERATORS(T)                                                  \
  inline T operator+(T a, T b) { return T(static_cast<float>(a) + static_cast<float>(b)); } \
  inline T operator-(T a, T b) { return T(static_cast<float>(a) - static_cast<float>(b)); } \
  inline T operator*(T a, T b) { return T(static_cast<float>(a) * static_cast<float>(b)); } \
  inline T operator/(T a, T b) { return T(static_cast<float>(a) / static_cast<float>(b)); } \
  inline T& operator+=(T& a, T b) { return a = a + b; }                             \
  inline T& operator-=(T& a, T b) { return a = a - b; }                             \
  inline T& operator*=(T& a, T b) { return a = a * b; }                             \
  inline T& operator/=(T& a, T b) { return a = a / b; }                             \
  inline T operator-(T a) {                                                         \
    T r;                                                                            \
    r.__x = static_cast<unsigned short>(a.__x ^ 0x8000u);                            \
    return r;                                                                       \
  }                                                                                 \
  inline T operator+(T a) { return a; }                                             \
  inline bool operator==(T a, T b) { return static_cast<float>(a) == static_cast<float>(b); } \
  inline bool operator!=(T a, T b) { return static_cast<float>(a) != static_cast<float>(b); } \
  inline bool operator<(T a, T b) { return static_cast<float>(a) < static_cast<float>(b); }   \
  inline bool operator>(T a, T b) { return static_cast<float>(a) > static_cast<float>(b); }   \
  inline bool operator<=(T a, T b) { return static_cast<float>(a) <= static_cast<float>(b); } \
  inline bool operator>=(T a, T b) { return static_cast<float>(a) >= static_cast<float>(b); }

CUDA_EMU_HALF_OPERATORS(__half)
CUDA_EMU_HALF_OPERATORS(__nv_bfloat16)
#undef CUDA_EMU_HALF_OPERATORS
