// The register tile of conv2d's 1x1 path (overview: conv2d_1x1.h), compiled once per ISA
// (isa_ns.h). AVX-512: 12 pixels x 2 vectors of 16 channels (24 of the 32 registers hold sums,
// two the weight row, the pixel values are broadcast from memory into the FMAs), so each
// 128-byte weight row read from L2 feeds 24 FMAs; AVX2: 6 x 2 vectors of 8 (12 of 16 registers).
// Nothing here calls an inline function of another header but the per-ISA ones of isa_vec.h and
// the intrinsics (scripts/check_isa_symbols.py): the activation is spelt out locally, in the form
// of conv2d_epilogue_kernel.cpp.
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#if GPEN_ISA_AVX512 && defined(__GNUC__) && !defined(__clang__)
// GCC 12's default register allocator keeps one of the 24 accumulators of the 12-row tile on the
// stack inside its loop (with 5 vector registers free); the priority algorithm does not (the
// AVX2 tile is the other way round, so only this copy asks for it).
#pragma GCC optimize("ira-algorithm=priority")
#endif

// The epilogue's multiply-adds stay two roundings in every copy, vector or scalar lanes (GCC
// would contract some of them, differently per ISA); the sums use explicit FMAs. Before the
// headers on purpose: GCC does not inline a function built under other optimize options (the
// vector loads of isa_vec.h) into one under these, so everything here shares them.
#include "engine/core/no_fp_contract.h"  // NOLINT: the pragma covers this file's own helpers too
#include "kernels/cpu/conv2d_1x1.h"
#include "kernels/cpu/isa_ns.h"
#include "kernels/cpu/isa_vec.h"

namespace gpen::cpu::detail::GPEN_ISA_NS {

namespace {

using namespace gpen::cpu::GPEN_ISA_NS::simd;

#if GPEN_ISA_AVX512
constexpr int kMR = 12;
inline vf fmadd(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
inline vf bcast(const float* p) { return _mm512_set1_ps(*p); }
#elif defined(__AVX2__)
constexpr int kMR = 6;
inline vf fmadd(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
inline vf bcast(const float* p) { return _mm256_broadcast_ss(p); }
#else
constexpr int kMR = 6;
inline vf fmadd(vf a, vf b, vf c) { return vfmadd(a, b, c); }
inline vf bcast(const float* p) { return splat(*p); }
#endif
constexpr int kNR = 2 * L;

// act_branchless lane-wise, as conv2d_epilogue_kernel.cpp's vact / sact.
inline vf vact(vf v, vf slope, vf gain) {
  const vf zero = {};
  const vf pos = v < zero ? zero : v;
  const vf neg = zero < v ? zero : v;
  return gain * (pos + slope * neg);
}
inline float sact(float v, float slope, float gain) {
  const float pos = v < 0.0f ? 0.0f : v;
  const float neg = 0.0f < v ? 0.0f : v;
  return gain * (pos + slope * neg);
}

// act(v + bias) + res for `n` (<= L) columns starting at column `col` of row pointers y / res.
inline void finish(vf v, const G1Tile& t, int r, int col, int n, vf vs, vf vg) {
  float* yp = t.y[r] + col;
  const float* rp = t.res ? t.res[r] + col : nullptr;
  // act_last: the residual is added before the activation (it is only set with a residual).
  if (n == L) {
    if (t.bias) v += vld(t.bias + col);
    if (t.act_last) v += vld(rp);
    v = vact(v, vs, vg);
    if (rp && !t.act_last) v += vld(rp);  // read before the store: the residual may be the output
    vst(yp, v);
    return;
  }
  float tmp[L];
  vst(tmp, v);
  for (int j = 0; j < n; ++j) {
    float s = tmp[j];
    if (t.bias) s += t.bias[col + j];
    if (t.act_last) s += rp[j];
    s = sact(s, t.slope, t.gain);
    if (rp && !t.act_last) s += rp[j];
    yp[j] = s;
  }
}

// The epilogue of the last depth block: rows x nr sums in buf (leading dimension nr).
__attribute__((noinline)) void finish_rows(const G1Tile& t, const float* buf, int rows) {
  const vf vs = splat(t.slope), vg = splat(t.gain);
  const int n0 = t.cols < L ? t.cols : L, n1 = t.cols - n0;
  for (int r = 0; r < rows; ++r) {
    finish(vld(buf + r * kNR), t, r, 0, n0, vs, vg);
    if (n1 > 0) finish(vld(buf + r * kNR + L), t, r, L, n1, vs, vg);
  }
}

// kUniform: row r's input is t.a[0] + r * t.lda; the rows are then addressed from a base per
// three rows ([base + lda * 4 or 8]), which leaves the general registers for the loop: with one
// pointer per row the 12-row tile runs out of them and spills.
template <int R, bool kUniform>
void tile(const G1Tile& t) {
  vf c0[R], c1[R];
  const float* a[R];
  const float* g[(R + 2) / 3];
  const int64_t lda = t.lda;
#pragma GCC unroll 4
  for (int q = 0; q < (R + 2) / 3; ++q) g[q] = t.a[0] + 3 * q * lda;
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    a[r] = t.a[r];
    if (t.load) {
      c0[r] = vld(t.c + r * t.ldc);
      c1[r] = vld(t.c + r * t.ldc + L);
    } else {
      c0[r] = vf{};
      c1[r] = vf{};
    }
  }
  if (t.final) {
    // The output and residual lines of this tile are fetched while the sums run: in the
    // shallow, memory-bound convs they would otherwise stall the epilogue (DRAM latency).
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      __builtin_prefetch(t.y[r], 1, 3);
      __builtin_prefetch(t.y[r] + 16, 1, 3);
      if (t.res) {
        __builtin_prefetch(t.res[r], 0, 3);
        __builtin_prefetch(t.res[r] + 16, 0, 3);
      }
    }
  }
  const float* bp = t.b;
  const int64_t kd = t.kd;
  if constexpr (kUniform) {
#pragma GCC unroll 2
    for (int64_t k = 0; k < kd; ++k, bp += kNR) {
      const vf b0 = vld(bp), b1 = vld(bp + L);
#pragma GCC unroll 12
      for (int r = 0; r < R; ++r) {
        const vf av = bcast(g[r / 3] + (r % 3) * lda);
        c0[r] = fmadd(av, b0, c0[r]);
        c1[r] = fmadd(av, b1, c1[r]);
      }
#pragma GCC unroll 4
      for (int q = 0; q < (R + 2) / 3; ++q) ++g[q];
    }
  } else {
#pragma GCC unroll 2
    for (int64_t k = 0; k < kd; ++k, bp += kNR) {
      const vf b0 = vld(bp), b1 = vld(bp + L);
#pragma GCC unroll 12
      for (int r = 0; r < R; ++r) {
        const vf av = bcast(a[r] + k);
        c0[r] = fmadd(av, b0, c0[r]);
        c1[r] = fmadd(av, b1, c1[r]);
      }
    }
  }
  // The sums leave the registers here, into c or (last depth block) a buffer the epilogue reads:
  // the epilogue in this function as well would take registers from the loop (GCC then keeps an
  // accumulator on the stack).
  alignas(64) float buf[R * kNR];
  float* out = t.final ? buf : t.c;
  const int64_t ldo = t.final ? kNR : t.ldc;
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    vst(out + r * ldo, c0[r]);
    vst(out + r * ldo + L, c1[r]);
  }
  if (t.final) finish_rows(t, buf, R);
}

}  // namespace

int conv1x1_mr() { return kMR; }
int conv1x1_nr() { return kNR; }

void conv1x1_tile(const G1Tile& t) {
  if (t.lda > 0 && t.rows == kMR) return tile<kMR, true>(t);
  switch (t.rows) {
    case 1: return tile<1, false>(t);
    case 2: return tile<2, false>(t);
    case 3: return tile<3, false>(t);
    case 4: return tile<4, false>(t);
    case 5: return tile<5, false>(t);
    case 6: return tile<6, false>(t);
#if GPEN_ISA_AVX512
    case 7: return tile<7, false>(t);
    case 8: return tile<8, false>(t);
    case 9: return tile<9, false>(t);
    case 10: return tile<10, false>(t);
    case 11: return tile<11, false>(t);
    case 12: return tile<12, false>(t);
#endif
    default: return;
  }
}

}  // namespace gpen::cpu::detail::GPEN_ISA_NS
