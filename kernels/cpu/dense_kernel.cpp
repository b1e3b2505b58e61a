// The per-ISA row blocks of y = x w^T (overview: dense_isa.h): the block's weight transposed into
// a stack panel (depth x two vectors), then eight rows at a time (AVX2: four), each input broadcast against
// the panel's two vectors into eight accumulators. Every output lane sums its terms in input
// order with one FMA each, so the 8- and 16-lane copies give the same bits.
#include <cstring>

#include "kernels/cpu/dense_isa.h"
#include "kernels/cpu/isa_ns.h"
#include "kernels/cpu/isa_vec.h"

namespace gpen::cpu::detail::GPEN_ISA_NS {

namespace {

using namespace gpen::cpu::GPEN_ISA_NS::simd;

constexpr int64_t kW = 2 * L;  // outputs of a block
// Rows at a time: 2 kRows accumulators, the two weight vectors and a broadcast in the registers.
#if GPEN_ISA_AVX512
constexpr int kRows = 8;
#else
constexpr int kRows = 4;
#endif

// s in every lane, one instruction (splat's vf{} + s is an addition the compiler must keep, for -0).
inline vf bcast(float s) {
#if GPEN_ISA_AVX512
  return _mm512_set1_ps(s);
#elif defined(__AVX__)
  return _mm256_set1_ps(s);
#else
  return splat(s);
#endif
}

// Rows [n0, n0 + R) over depth [i0, i0 + kd): from zero at i0 = 0, else from what y holds.
template <int R>
void rows(const float* x, int64_t ldx, const float* pk, float* y, int64_t ldy, int64_t n0, int64_t i0, int64_t kd,
          int64_t nw) {
  vf acc[R][2];
  float tmp[kW];
  for (int r = 0; r < R; ++r) {
    if (i0 == 0) {
      acc[r][0] = acc[r][1] = vf{};
    } else if (nw == kW) {
      acc[r][0] = vld(y + (n0 + r) * ldy), acc[r][1] = vld(y + (n0 + r) * ldy + L);
    } else {
      std::memset(tmp, 0, sizeof tmp);
      std::memcpy(tmp, y + (n0 + r) * ldy, static_cast<size_t>(nw) * sizeof(float));
      acc[r][0] = vld(tmp), acc[r][1] = vld(tmp + L);
    }
  }
  const float* xr[R];
  for (int r = 0; r < R; ++r) xr[r] = x + (n0 + r) * ldx + i0;
  for (int64_t i = 0; i < kd; ++i) {
    const vf w0 = vld(pk + i * kW), w1 = vld(pk + i * kW + L);
    for (int r = 0; r < R; ++r) {
      const vf xb = bcast(xr[r][i]);
      acc[r][0] = vfmadd(xb, w0, acc[r][0]);
      acc[r][1] = vfmadd(xb, w1, acc[r][1]);
    }
  }
  for (int r = 0; r < R; ++r) {
    if (nw == kW) {
      vst(y + (n0 + r) * ldy, acc[r][0]), vst(y + (n0 + r) * ldy + L, acc[r][1]);
    } else {
      vst(tmp, acc[r][0]), vst(tmp + L, acc[r][1]);
      std::memcpy(y + (n0 + r) * ldy, tmp, static_cast<size_t>(nw) * sizeof(float));
    }
  }
}

}  // namespace

int64_t dense_block_width() { return kW; }

void dense_block(const float* x, int64_t ldx, const float* w, int64_t ldw, float* y, int64_t ldy, int64_t N,
                 int64_t I, int64_t nw) {
  alignas(64) float pk[kDenseDepth * kW];
  for (int64_t i0 = 0; i0 < I; i0 += kDenseDepth) {
    const int64_t kd = lmin(kDenseDepth, I - i0);
    for (int64_t j = 0; j < kW; ++j)
      for (int64_t i = 0; i < kd; ++i) pk[i * kW + j] = j < nw ? w[j * ldw + i0 + i] : 0.0f;
    int64_t n0 = 0;
    for (; n0 + kRows <= N; n0 += kRows) rows<kRows>(x, ldx, pk, y, ldy, n0, i0, kd, nw);
    for (; n0 < N; ++n0) rows<1>(x, ldx, pk, y, ldy, n0, i0, kd, nw);
  }
}

}  // namespace gpen::cpu::detail::GPEN_ISA_NS
