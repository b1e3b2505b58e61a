#pragma once
// nvcuda::wmma for the host emulator. On a GPU a fragment is spread over the 32 lanes of a warp
// in an unspecified order; here every emulated lane holds the whole tile (row-major), so
// num_elements is the tile size. Code that treats fragment elements uniformly (fill, scale,
// convert every x[i]) behaves as on the GPU; code that assumes an element -> (row, col) mapping
// is wrong on both. mma_sync multiplies exactly-converted inputs and accumulates in float in k
// order; tensor cores add the same exact products in another order, so results agree to float
// rounding. The load/store pointer and ldm rules of the CUDA guide are checked, because breaking
// them works here but not on the GPU.
#include <cstdint>
#include <string>
#include <type_traits>

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

namespace detail {

template <class Use, int M, int N, int K>
struct TileDims;
template <int M, int N, int K>
struct TileDims<matrix_a, M, N, K> {
  static constexpr int rows = M, cols = K;
};
template <int M, int N, int K>
struct TileDims<matrix_b, M, N, K> {
  static constexpr int rows = K, cols = N;
};
template <int M, int N, int K>
struct TileDims<accumulator, M, N, K> {
  static constexpr int rows = M, cols = N;
};

template <int M, int N, int K>
constexpr bool supported_shape = (M == 16 && N == 16 && K == 16) || (M == 32 && N == 8 && K == 16) ||
                                 (M == 8 && N == 32 && K == 16);

template <class T>
void check_tile_pointer(const T* p, unsigned ldm, const char* op) {
  // CUDA: "mptr must be a 256-bit aligned pointer"; "ldm must be a multiple of 8 for __half
  // element type or multiple of 4 for float element type" (i.e. of 16 bytes).
  if (reinterpret_cast<uintptr_t>(p) % 32 != 0)
    ::cuda_emu::fault(std::string("nvcuda::wmma::") + op + ": pointer is not 32-byte aligned");
  if ((ldm * sizeof(T)) % 16 != 0)
    ::cuda_emu::fault(std::string("nvcuda::wmma::") + op + ": ldm " + std::to_string(ldm) +
                      " is not a multiple of 16 bytes");
}

}  // namespace detail

template <class Use, int M, int N, int K, class T, class Layout = void>
class fragment {
  static_assert(detail::supported_shape<M, N, K>, "unsupported WMMA shape");
  static_assert(std::is_same_v<Use, accumulator> == std::is_same_v<Layout, void>,
                "matrix_a / matrix_b fragments take row_major or col_major; accumulators take none");

 public:
  using element_type = T;
  using storage_element_type = T;
  static constexpr int rows = detail::TileDims<Use, M, N, K>::rows;
  static constexpr int cols = detail::TileDims<Use, M, N, K>::cols;
  static constexpr int num_elements = rows * cols;
  T x[num_elements];  // element (r, c) of the tile at x[r * cols + c]
};

template <class Use, int M, int N, int K, class T, class Layout>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, const std::type_identity_t<T>& v) {
  for (int i = 0; i < f.num_elements; ++i) f.x[i] = v;
}

template <class Use, int M, int N, int K, class T, class Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const T* p, unsigned ldm) {
  static_assert(!std::is_same_v<Use, accumulator>, "accumulator loads take a layout_t");
  detail::check_tile_pointer(p, ldm, "load_matrix_sync");
  constexpr bool row = std::is_same_v<Layout, row_major>;
  using Frag = fragment<Use, M, N, K, T, Layout>;
  for (int r = 0; r < Frag::rows; ++r)
    for (int c = 0; c < Frag::cols; ++c) f.x[r * Frag::cols + c] = row ? p[r * ldm + c] : p[c * ldm + r];
}

template <int M, int N, int K, class T>
void load_matrix_sync(fragment<accumulator, M, N, K, T>& f, const T* p, unsigned ldm, layout_t layout) {
  detail::check_tile_pointer(p, ldm, "load_matrix_sync");
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) f.x[r * N + c] = layout == mem_row_major ? p[r * ldm + c] : p[c * ldm + r];
}

template <int M, int N, int K, class T>
void store_matrix_sync(T* p, const fragment<accumulator, M, N, K, T>& f, unsigned ldm, layout_t layout) {
  detail::check_tile_pointer(p, ldm, "store_matrix_sync");
  // Every emulated lane holds the whole tile, but as on a GPU each stores only its share (element
  // i by lane i % 32): the warp together writes each element once, which the checker expects.
  const int lane = static_cast<int>(::cuda_emu::coords_location()->lane);
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) {
      if ((r * N + c) % 32 != lane) continue;
      if (layout == mem_row_major)
        p[r * ldm + c] = f.x[r * N + c];
      else
        p[c * ldm + r] = f.x[r * N + c];
    }
}

template <int M, int N, int K, class Tab, class LA, class LB, class Tc>
void mma_sync(fragment<accumulator, M, N, K, Tc>& d, const fragment<matrix_a, M, N, K, Tab, LA>& a,
              const fragment<matrix_b, M, N, K, Tab, LB>& b, const fragment<accumulator, M, N, K, Tc>& c) {
  static_assert(std::is_same_v<Tab, __half> || std::is_same_v<Tab, __nv_bfloat16>,
                "the emulator implements half and bf16 multiplicands");
  // Each emulated lane computes the whole tile, so convert the inputs once (exactly) up front.
  float fa[M * K], fbt[N * K], out[M * N];
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k) fa[i * K + k] = static_cast<float>(a.x[i * K + k]);
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < N; ++j) fbt[j * K + k] = static_cast<float>(b.x[k * N + j]);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = static_cast<float>(c.x[i * N + j]);
      for (int k = 0; k < K; ++k) acc += fa[i * K + k] * fbt[j * K + k];
      out[i * N + j] = acc;
    }
  for (int i = 0; i < M * N; ++i) d.x[i] = Tc(out[i]);
}

}  // namespace wmma
}  // namespace nvcuda
