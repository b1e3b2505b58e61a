#pragma once
// The PTX instructions of kernels/cuda/ptx.cuh for the host emulator, following the PTX ISA to
// the letter where a kernel could notice:
//  - mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}: the warp's 32 lanes exchange their
//    fragment registers (warp_gather) and each lane computes its own four elements of D from
//    the A, B and C fragments laid out as the ISA specifies (groupID = lane / 4,
//    threadID_in_group = lane % 4): a0..a3 hold A[g][2t..2t+1], A[g+8][2t..], A[g][2t+8..],
//    A[g+8][2t+8..]; b0, b1 hold B[2t..2t+1][g], B[2t+8..][g]; c/d hold C[g][2t..2t+1],
//    C[g+8][2t..]. Products of two 16-bit values are exact in f32; they are added to c in k
//    order (a tensor core adds the same products in another order).
//  - ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared.b16: lane 8 i + r gives the address of
//    row r of matrix i (16 bytes, 16-byte aligned, shared memory); lane l receives word l % 4
//    of row l / 4 of every matrix (.trans: the column, i.e. elements (2 (l % 4), l / 4) and
//    (2 (l % 4) + 1, l / 4)). The reads are the receiving lane's, so the checker sees them.
//  - cp.async.cg.shared.global 16 bytes with src-size (zero fill), commit_group, wait_group N:
//    the global bytes are read at issue, but the shared destination holds poison (0xff) until
//    the issuing thread's wait_group completes the group, and under GPEN_CUDA_EMU_CHECK any
//    access before that is reported (checker.cpp); the completed bytes count as that thread's
//    write, so other threads need a __syncthreads after the wait.
// The warp-collective instructions fault unless every lane of the warp executes them
// (.aligned: undefined on a GPU otherwise).
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace cuda_emu {
// Whether [p, p + n) lies in the running block's shared memory (checker.cpp).
bool is_shared_address(const void* p, size_t n);
// The cp.async bookkeeping of the running thread (checker.cpp).
void async_copy_issue(void* dst, const void* data, size_t n, const void* ret);
void async_commit_group();
void async_wait_group(int n);
}  // namespace cuda_emu

namespace cuda_emu::ptx {

inline void require_full_warp(unsigned members, const char* op) {
  if (members != 0xffffffffu)
    fault(std::string(op) + ": executed by lanes " + std::to_string(members) +
          " only; the .aligned instruction needs all 32 lanes of the warp");
}

template <class T>
inline float b16_to_float(uint32_t word, int half) {
  const unsigned short bits = static_cast<unsigned short>(half ? word >> 16 : word & 0xffffu);
  if constexpr (std::is_same_v<T, __half>)
    return half_bits_to_float(bits);
  else
    return bf16_bits_to_float(bits);
}

template <class T>
__attribute__((noinline)) void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                            const float (&c)[4]) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "mma.sync takes f16 or bf16");
  struct Frag {
    uint32_t a[4], b[2];
  };
  const Frag mine{{a[0], a[1], a[2], a[3]}, {b[0], b[1]}};
  Frag all[32];
  require_full_warp(warp_gather(0xffffffffu, &mine, sizeof mine, all, "mma.sync.m16n8k16"), "mma.sync.m16n8k16");
  // Element (row, k) of A is half k % 2 of register (row >= 8) + 2 (k >= 8) of lane
  // 4 (row % 8) + (k % 8) / 2; (k, n) of B half k % 2 of register k >= 8 of lane 4 n + (k % 8) / 2.
  auto A = [&](int row, int k) {
    return b16_to_float<T>(all[4 * (row % 8) + (k % 8) / 2].a[(row >= 8) + 2 * (k >= 8)], k & 1);
  };
  auto B = [&](int k, int n) { return b16_to_float<T>(all[4 * n + (k % 8) / 2].b[k >= 8], k & 1); };
  const int lane = static_cast<int>(coords_location()->lane), g = lane / 4, t = lane % 4;
  float fa[2][16], fb[2][16];
  for (int k = 0; k < 16; ++k) {
    fa[0][k] = A(g, k), fa[1][k] = A(g + 8, k);
    fb[0][k] = B(k, 2 * t), fb[1][k] = B(k, 2 * t + 1);
  }
  float out[4];
  for (int i = 0; i < 4; ++i) {
    float acc = c[i];
    for (int k = 0; k < 16; ++k) acc += fa[i >> 1][k] * fb[i & 1][k];
    out[i] = acc;
  }
  for (int i = 0; i < 4; ++i) d[i] = out[i];
}

template <int N, bool Trans>
__attribute__((always_inline)) inline void ldmatrix(uint32_t (&r)[N], const void* row) {
  static_assert(N == 1 || N == 2 || N == 4, "ldmatrix loads 1, 2 or 4 matrices");
  const char* op = Trans ? "ldmatrix.trans" : "ldmatrix";
  const uint64_t mine = reinterpret_cast<uintptr_t>(row);
  uint64_t addr[32];
  require_full_warp(warp_gather(0xffffffffu, &mine, sizeof mine, addr, op), op);
  for (int l = 0; l < 8 * N; ++l) {
    const void* p = reinterpret_cast<const void*>(static_cast<uintptr_t>(addr[l]));
    if (addr[l] % 16 != 0)
      fault(std::string(op) + ": lane " + std::to_string(l) + "'s row address is not 16-byte aligned");
    if (!is_shared_address(p, 16))
      fault(std::string(op) + ": lane " + std::to_string(l) + "'s row address is not in shared memory");
  }
  const int lane = static_cast<int>(coords_location()->lane), rr = lane / 4, w = lane % 4;
  for (int i = 0; i < N; ++i) {
    if constexpr (Trans) {
      const auto* lo = reinterpret_cast<const uint16_t*>(static_cast<uintptr_t>(addr[8 * i + 2 * w])) + rr;
      const auto* hi = reinterpret_cast<const uint16_t*>(static_cast<uintptr_t>(addr[8 * i + 2 * w + 1])) + rr;
      r[i] = static_cast<uint32_t>(*lo) | static_cast<uint32_t>(*hi) << 16;
    } else {
      r[i] = reinterpret_cast<const uint32_t*>(static_cast<uintptr_t>(addr[8 * i + rr]))[w];
    }
  }
}

__attribute__((noinline)) inline void cp_async_16(void* dst, const void* src, int src_bytes) {
  if (src_bytes < 0 || src_bytes > 16) fault("cp.async: src-size " + std::to_string(src_bytes) + " outside [0, 16]");
  if (reinterpret_cast<uintptr_t>(dst) % 16 != 0 || (src_bytes > 0 && reinterpret_cast<uintptr_t>(src) % 16 != 0))
    fault("cp.async: a 16-byte copy needs 16-byte aligned source and destination");
  if (src_bytes > 0 && !is_device_accessible(src)) fault("cp.async: the source is not device memory");
  alignas(16) unsigned char data[16] = {};
  if (src_bytes == 16) {
    const uint4 v = *static_cast<const uint4*>(src);
    std::memcpy(data, &v, 16);
  } else {
    for (int i = 0; i < src_bytes; ++i) data[i] = static_cast<const unsigned char*>(src)[i];
  }
  async_copy_issue(dst, data, 16, __builtin_return_address(0));
}

}  // namespace cuda_emu::ptx
