#pragma once
// Shared by the pipeline kernels (warp.cu, paste.cu, image_convert.cu, detect_decode.cu):
// float / double operations that are rounded one by one and never fused, and the warp sampling
// of cv2.warpAffine (kernels/cpu/warp.cpp) in device code.
//
// Why the rounded helpers: the CPU twins are compiled without fused multiply-adds where OpenCV
// has none, and nvcc contracts a * b + c into an FMA by default (GCC does too with -mfma, which
// the emulated build uses). The __*_rn intrinsics are never contracted on the device; on the host
// (the emulator, and host code under nvcc) a volatile store forces the rounding of each step.
#include <climits>
#include <cmath>
#include <cstdint>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_pipeline.h"

GPEN_CUDA_NAMESPACE_BEGIN

namespace pipe {

__host__ __device__ __forceinline__ float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  volatile float r = a * b;
  return r;
#endif
}

__host__ __device__ __forceinline__ float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  volatile float r = a + b;
  return r;
#endif
}

__host__ __device__ __forceinline__ double dmul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  volatile double r = a * b;
  return r;
#endif
}

__host__ __device__ __forceinline__ double dadd_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  volatile double r = a + b;
  return r;
#endif
}

// saturate_cast<uchar>(float) as engine/photo/paste.cpp: clamp first (so the conversion is defined),
// round half to even, clamp.
__device__ __forceinline__ uint8_t round_sat_u8(float v) {
  const int i = static_cast<int>(rintf(fminf(fmaxf(v, -1.0f), 256.0f)));
  return static_cast<uint8_t>(i < 0 ? 0 : (i > 255 ? 255 : i));
}

// ---- cv2.warpAffine (see kernels/cpu/warp.cpp for the derivation of each step)

constexpr int kInterBits = 5, kTabSize = 1 << kInterBits, kAbBits = 10;
constexpr int kRoundDelta = (1 << kAbBits) / kTabSize / 2;
constexpr int kCoefBits = 15, kCoefScale = 1 << kCoefBits;

// Everything a warp kernel needs, by value: the destination -> source matrix (inverted on the
// host), the source size, the ROI and the destination rows, and the 1-D bicubic weights per 1/32
// cell (computed on the host with OpenCV's float order; 512 bytes). The source pitch (bytes for
// BGR, elements for float) is passed to the pixel functions, so one WarpArgs serves a BGR face
// and its float mask (paste.cu).
struct WarpArgs {
  double M[6];
  int sw, sh;
  int rx, ry, rw, rh;
  int64_t dst_pitch;
  float cub[kTabSize][4];
};

__device__ __forceinline__ int32_t cv_round(double v) {
  const double r = rint(v);
  if (!(r >= -2147483648.0 && r <= 2147483647.0)) return INT32_MIN;
  return static_cast<int32_t>(r);
}

__device__ __forceinline__ int32_t wrap_add(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

__host__ __device__ __forceinline__ int saturate_short(int64_t v) {
  return static_cast<int>(v < SHRT_MIN ? SHRT_MIN : (v > SHRT_MAX ? SHRT_MAX : v));
}

// Integer source position (floor) and 1/32 cell of destination pixel (x, y): the per-column
// (adelta) and per-row (X0) terms of WarpAffineInvoker, each rounded as OpenCV rounds them.
struct Tap {
  int ix, iy, fx, fy;
};

__device__ __forceinline__ Tap source_tap(const WarpArgs& a, int x, int y) {
  const double yd = static_cast<double>(y), xd = static_cast<double>(x);
  const int32_t X0 = wrap_add(cv_round(dmul_rn(dadd_rn(dmul_rn(a.M[1], yd), a.M[2]), 1 << kAbBits)), kRoundDelta);
  const int32_t Y0 = wrap_add(cv_round(dmul_rn(dadd_rn(dmul_rn(a.M[4], yd), a.M[5]), 1 << kAbBits)), kRoundDelta);
  const int32_t ad = cv_round(dmul_rn(dmul_rn(a.M[0], xd), 1 << kAbBits));
  const int32_t bd = cv_round(dmul_rn(dmul_rn(a.M[3], xd), 1 << kAbBits));
  const int32_t X = wrap_add(X0, ad) >> (kAbBits - kInterBits);
  const int32_t Y = wrap_add(Y0, bd) >> (kAbBits - kInterBits);
  return {saturate_short(X >> kInterBits), saturate_short(Y >> kInterBits), X & (kTabSize - 1), Y & (kTabSize - 1)};
}

// Bilinear 15-bit weights of a cell: (32 - f) or f per axis, times 32, exact. The one cell
// whose weight is 1 (0, 0) saturates to 32767 and OpenCV's sum correction puts the missing unit
// on tap 3 (see build_table in kernels/cpu/warp.cpp): {32767, 0, 0, 1}.
__device__ __forceinline__ void linear_weights_i(int fx, int fy, int (&w)[4]) {
  if (fx == 0 && fy == 0) {
    w[0] = 32767;
    w[1] = 0;
    w[2] = 0;
    w[3] = 1;
    return;
  }
  w[0] = (kTabSize - fy) * (kTabSize - fx) * kTabSize;
  w[1] = (kTabSize - fy) * fx * kTabSize;
  w[2] = fy * (kTabSize - fx) * kTabSize;
  w[3] = fy * fx * kTabSize;
}

// Bilinear float weights: the same products / 1024, exact in float (no correction in OpenCV's
// float table).
__device__ __forceinline__ void linear_weights_f(int fx, int fy, float (&w)[4]) {
  const float s = 1.0f / (kTabSize * kTabSize);
  w[0] = static_cast<float>((kTabSize - fy) * (kTabSize - fx)) * s;
  w[1] = static_cast<float>((kTabSize - fy) * fx) * s;
  w[2] = static_cast<float>(fy * (kTabSize - fx)) * s;
  w[3] = static_cast<float>(fy * fx) * s;
}

// Bicubic float weights of a cell: outer product of the 1-D weights, each product rounded.
__device__ __forceinline__ void cubic_weights_f(const WarpArgs& a, int fx, int fy, float (&w)[16]) {
#pragma unroll
  for (int k1 = 0; k1 < 4; ++k1)
#pragma unroll
    for (int k2 = 0; k2 < 4; ++k2) w[k1 * 4 + k2] = mul_rn(a.cub[fy][k1], a.cub[fx][k2]);
}

// Bicubic 15-bit weights: the float weights times 2^15 rounded half to even and saturated, then
// OpenCV's correction of the sum to 2^15 on the largest / smallest weight of the central 2x2.
__device__ __forceinline__ void cubic_weights_i(const WarpArgs& a, int fx, int fy, int (&t)[16]) {
  float f[16];
  cubic_weights_f(a, fx, fy, f);
  int isum = 0;
#pragma unroll
  for (int k = 0; k < 16; ++k) {
    t[k] = saturate_short(static_cast<int64_t>(rintf(f[k] * static_cast<float>(kCoefScale))));
    isum += t[k];
  }
  if (isum != kCoefScale) {
    // Values are tracked next to the indices and the fix is applied in an unrolled loop, so t
    // stays in registers (a dynamic index would put it in local memory).
    const int diff = isum - kCoefScale;
    int Mk = 2 * 4 + 2, mk = 2 * 4 + 2, Mv = t[Mk], mv = t[mk];
#pragma unroll
    for (int k1 = 2; k1 < 4; ++k1)
#pragma unroll
      for (int k2 = 2; k2 < 4; ++k2) {
        const int k = k1 * 4 + k2, v = t[k];
        if (v < mv) {
          mk = k;
          mv = v;
        } else if (v > Mv) {
          Mk = k;
          Mv = v;
        }
      }
    const int fix = diff < 0 ? Mk : mk;
#pragma unroll
    for (int k = 0; k < 16; ++k)
      if (k == fix) t[k] = static_cast<int16_t>(t[k] - diff);
  }
}

__device__ __forceinline__ uint8_t cast_u8(int sum) {
  const int v = (sum + (1 << (kCoefBits - 1))) >> kCoefBits;
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// One BGR destination pixel, bilinear: integer sums, so the order and the zero border taps need
// no special path.
__device__ __forceinline__ void warp_pixel_linear_u8(const WarpArgs& a, const uint8_t* src, int64_t pitch, int x, int y,
                                                     uint8_t* d) {
  const Tap t = source_tap(a, x, y);
  if (t.ix >= a.sw || t.ix + 1 < 0 || t.iy >= a.sh || t.iy + 1 < 0) {
    d[0] = d[1] = d[2] = 0;
    return;
  }
  int w[4];
  linear_weights_i(t.fx, t.fy, w);
  int s[3] = {0, 0, 0};
  for (int k = 0; k < 4; ++k) {
    const int xx = t.ix + (k & 1), yy = t.iy + (k >> 1);
    if (xx < 0 || xx >= a.sw || yy < 0 || yy >= a.sh) continue;
    const uint8_t* p = src + yy * pitch + int64_t{xx} * 3;
    for (int c = 0; c < 3; ++c) s[c] += p[c] * w[k];
  }
  for (int c = 0; c < 3; ++c) d[c] = cast_u8(s[c]);
}

__device__ __forceinline__ void warp_pixel_cubic_u8(const WarpArgs& a, const uint8_t* src, int64_t pitch, int x, int y,
                                                    uint8_t* d) {
  const Tap t = source_tap(a, x, y);
  const int sx = t.ix - 1, sy = t.iy - 1;
  if (sx >= a.sw || sx + 4 <= 0 || sy >= a.sh || sy + 4 <= 0) {
    d[0] = d[1] = d[2] = 0;
    return;
  }
  int w[16];
  cubic_weights_i(a, t.fx, t.fy, w);
  int s[3] = {0, 0, 0};
  for (int i = 0; i < 4; ++i) {
    const int yy = sy + i;
    if (yy < 0 || yy >= a.sh) continue;
    for (int j = 0; j < 4; ++j) {
      const int xx = sx + j;
      if (xx < 0 || xx >= a.sw) continue;
      const uint8_t* p = src + yy * pitch + int64_t{xx} * 3;
      for (int c = 0; c < 3; ++c) s[c] += p[c] * w[i * 4 + j];
    }
  }
  for (int c = 0; c < 3; ++c) d[c] = cast_u8(s[c]);
}

// One float destination pixel, bilinear: ((v0 w0 + v1 w1) + v2 w2) + v3 w3 with border taps 0,
// which is also the order of OpenCV's inside path.
__device__ __forceinline__ float warp_pixel_linear_f32(const WarpArgs& a, const float* src, int64_t pitch, int x, int y) {
  const Tap t = source_tap(a, x, y);
  if (t.ix >= a.sw || t.ix + 1 < 0 || t.iy >= a.sh || t.iy + 1 < 0) return 0.0f;
  float w[4];
  linear_weights_f(t.fx, t.fy, w);
  float v[4];
  for (int k = 0; k < 4; ++k) {
    const int xx = t.ix + (k & 1), yy = t.iy + (k >> 1);
    v[k] = xx >= 0 && xx < a.sw && yy >= 0 && yy < a.sh ? src[yy * pitch + xx] : 0.0f;
  }
  return add_rn(add_rn(add_rn(mul_rn(v[0], w[0]), mul_rn(v[1], w[1])), mul_rn(v[2], w[2])), mul_rn(v[3], w[3]));
}

// Bicubic float: inside, each row summed left to right and the rows added in turn; on the border
// path, 0 plus each inside tap in turn (two orders, as OpenCV).
__device__ __forceinline__ float warp_pixel_cubic_f32(const WarpArgs& a, const float* src, int64_t pitch, int x, int y) {
  const Tap t = source_tap(a, x, y);
  const int sx = t.ix - 1, sy = t.iy - 1;
  if (sx >= a.sw || sx + 4 <= 0 || sy >= a.sh || sy + 4 <= 0) return 0.0f;
  float w[16];
  cubic_weights_f(a, t.fx, t.fy, w);
  const unsigned width1 = static_cast<unsigned>(a.sw > 3 ? a.sw - 3 : 0);
  const unsigned height1 = static_cast<unsigned>(a.sh > 3 ? a.sh - 3 : 0);
  float sum = 0.0f;
  if (static_cast<unsigned>(sx) < width1 && static_cast<unsigned>(sy) < height1) {
    for (int i = 0; i < 4; ++i) {
      const float* S = src + (sy + i) * pitch + sx;
      const float row = add_rn(add_rn(add_rn(mul_rn(S[0], w[i * 4]), mul_rn(S[1], w[i * 4 + 1])), mul_rn(S[2], w[i * 4 + 2])),
                               mul_rn(S[3], w[i * 4 + 3]));
      sum = i == 0 ? row : add_rn(sum, row);
    }
    return sum;
  }
  for (int i = 0; i < 4; ++i) {
    const int yy = sy + i;
    if (yy < 0 || yy >= a.sh) continue;
    for (int j = 0; j < 4; ++j) {
      const int xx = sx + j;
      if (xx >= 0 && xx < a.sw) sum = add_rn(sum, mul_rn(src[yy * pitch + xx], w[i * 4 + j]));
    }
  }
  return sum;
}

}  // namespace pipe

// Host: checks shared by the warp entry points and paste_accumulate, and the WarpArgs of a
// transform (warp.cu).
void check_warp_source(const void* src, int sw, int sh, int64_t pitch, int64_t min_pitch, const char* op);
pipe::WarpArgs make_warp_args(const AffineTransform& m, int sw, int sh, PixelRect roi, int64_t dst_pitch);

GPEN_CUDA_NAMESPACE_END
