#pragma once
// The PTX layer of the fast GEMM kernels (modconv_mma.cu, conv2d_mma.cu): warp-level tensor-core
// MMA, ldmatrix and asynchronous global -> shared copies. Under nvcc these are inline PTX (sm_80+);
// in the emulator they are tests/cuda_emu/ptx_emu.h, which follows the PTX ISA's fragment layouts
// and makes cp.async asynchronous (poisoned destination until the wait, reported by the checker).
// This is the only file with inline PTX; kernels call these wrappers.
//
// Fragment layouts (PTX ISA, mma.m16n8k16 with .f16 / .bf16 inputs and .f32 accumulators;
// g = lane / 4, t = lane % 4; a register holds two 16-bit values, the lower index in the low half):
//   A (16 x 16, row-major) a[0] = A[g][2t, 2t+1]    a[1] = A[g+8][2t, 2t+1]
//                          a[2] = A[g][2t+8, +9]   a[3] = A[g+8][2t+8, +9]
//   B (16 x 8, "col")      b[0] = B[2t, 2t+1][g]   b[1] = B[2t+8, +9][g]
//   C, D (16 x 8, f32)     c[0], c[1] = C[g][2t, 2t+1]   c[2], c[3] = C[g+8][2t, 2t+1]
// ldmatrix m8n8 .b16: lane 8 i + r passes the address of row r of matrix i (16 bytes, 16-byte
// aligned); register i of lane l receives row l / 4, elements 2 (l % 4) and 2 (l % 4) + 1 of matrix
// i, or with .trans column l / 4, rows 2 (l % 4) and + 1. So an x4 over the four 8 x 8 quarters of
// a row-major 16 x 16 A tile (lanes 0-7 rows 0-7 col 0, 8-15 rows 8-15 col 0, 16-23 rows 0-7 col 8,
// 24-31 rows 8-15 col 8) gives a[0..3], and an x4.trans over a k-major [k][n] B tile (matrices
// (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15)) gives b[0..1] of two n8 tiles.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cuda/compat.h"

namespace gpen_ptx {

// D = A * B + C on one m16n8k16 tile by the whole warp. T: __half or __nv_bfloat16.
template <class T>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                             const float (&c)[4]) {
#if defined(GPEN_CUDA_EMU)
  ::cuda_emu::ptx::mma_m16n8k16<T>(d, a, b, c);
#elif defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
          "f"(c[3]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]),
          "f"(c[3]));
  }
#endif
}

#if !defined(GPEN_CUDA_EMU) && defined(__CUDA_ARCH__)
__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
#endif

// ldmatrix.sync.aligned.m8n8.xN[.trans].shared.b16: N = 1, 2, 4 matrices; `row` is this lane's
// row address (lanes 0 .. 8 N - 1 are read).
template <int N, bool Trans = false>
__device__ __forceinline__ void ldmatrix(uint32_t (&r)[N], const void* row) {
#if defined(GPEN_CUDA_EMU)
  ::cuda_emu::ptx::ldmatrix<N, Trans>(r, row);
#elif defined(__CUDA_ARCH__)
  const unsigned s = shared_address(row);
  if constexpr (N == 1 && !Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(s));
  else if constexpr (N == 1)
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(s));
  else if constexpr (N == 2 && !Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(s));
  else if constexpr (N == 2)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(s));
  else if constexpr (!Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
#endif
}

// cp.async.cg.shared.global [dst], [src], 16, src_bytes: copies src_bytes (0..16) and fills the
// rest of the 16 destination bytes with zeros (src_bytes = 0: an out-of-bounds tap, nothing
// read). Both addresses 16-byte aligned. Lands only after the matching wait_group.
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, int src_bytes) {
#if defined(GPEN_CUDA_EMU)
  ::cuda_emu::ptx::cp_async_16(dst, src, src_bytes);
#elif defined(__CUDA_ARCH__)
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)), "l"(src),
               "r"(src_bytes)
               : "memory");
#endif
}

// cp.async.commit_group: this thread's copies issued since the last commit form a group.
__device__ __forceinline__ void cp_async_commit() {
#if defined(GPEN_CUDA_EMU)
  ::cuda_emu::async_commit_group();
#elif defined(__CUDA_ARCH__)
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// cp.async.wait_group N: waits until at most this thread's N newest groups are in flight. Other
// threads see the data only after a barrier.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(GPEN_CUDA_EMU)
  ::cuda_emu::async_wait_group(N);
#elif defined(__CUDA_ARCH__)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// Two 16-bit values as one register (lo in the low half), and back.
template <class T>
__device__ __forceinline__ uint32_t pack2(T lo, T hi) {
  uint16_t l, h;
  static_assert(sizeof(T) == 2, "pack2 takes 16-bit values");
  memcpy(&l, &lo, 2);
  memcpy(&h, &hi, 2);
  return static_cast<uint32_t>(l) | static_cast<uint32_t>(h) << 16;
}

}  // namespace gpen_ptx
