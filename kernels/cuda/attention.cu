// Multi-head self- and cross-attention, as cpu::attention (kernels/params.h AttentionParams), one
// sample at a time through the workspace (f32):
//   xq = x + pos, xv = x, xc = query + pos               (elementwise; xc for a cross-attention)
//   qkv[L, 3E] = [xq | xq | xv] in_w^T + in_b            (two GEMM launches: q and k, then v;
//                                                         three, q from xc, for a cross-attention)
//   scores[h] = q_h k_h^T / sqrt(d)                      (one launch, heads on blockIdx.z)
//   softmax over each score row                          (a warp per row, in place)
//   ctx[:, h d : (h + 1) d] = scores[h] v_h              (one launch, heads on blockIdx.z)
//   y = ctx out_w^T + out_b                              (written in the activation dtype)
// Every product goes through one strided batched SIMT GEMM: 16 x 16 output tiles, 16-deep slices
// of A and B staged in shared memory, one output per thread, f32 accumulation. Its operands are
// views with arbitrary row / column strides, so the transposes of the weights and of K are read
// in place. The tensor-core GEMMs of the convolutions (kernels/cuda/mma_gemm.cuh) take NHWC
// activations and HWIO weights, not these strided head slices; at CodeFormer's L = 256, E = 512
// the products are 0.3 GFLOP per layer, and the score matrix [8, 256, 256] (2 MiB) is the
// workspace's largest part. A fused form would tile queries by 64 rows, stream 64-key blocks of
// K and V through shared memory with a running max and sum per row, and never write the scores.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/ops_transformer.h"
#include "kernels/cpu/transformer_shapes.h"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kTile = 16;
constexpr int kWarpsPerBlock = 8;

// C[b][i][j] = alpha * sum_k A[b][i][k] B[b][k][j] + bias[j], i < m, j < n, k < k_len.
struct Gemm {
  int64_t m, n, k;
  int64_t a_batch, a_row, a_col;
  int64_t b_batch, b_row, b_col;
  int64_t c_batch, c_row, c_col;
  int64_t bias_stride;
  float alpha;
};

template <class TB, class TC>
__global__ void __launch_bounds__(kTile * kTile)
    gemm_kernel(const Gemm g, const float* a, const TB* b, const TB* bias, TC* c) {
  GPEN_SHARED(float, a_s, [kTile][kTile + 1]);
  GPEN_SHARED(float, b_s, [kTile][kTile + 1]);
  const int tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  const int64_t i = int64_t{blockIdx.y} * kTile + ty, j = int64_t{blockIdx.x} * kTile + tx;
  const float* ab = a + int64_t{blockIdx.z} * g.a_batch;
  const TB* bb = b + int64_t{blockIdx.z} * g.b_batch;
  float acc = 0.0f;
  for (int64_t k0 = 0; k0 < g.k; k0 += kTile) {
    const int64_t ka = k0 + tx, kb = k0 + ty;
    a_s[ty][tx] = i < g.m && ka < g.k ? ab[i * g.a_row + ka * g.a_col] : 0.0f;
    b_s[ty][tx] = kb < g.k && j < g.n ? to_f32(bb[kb * g.b_row + j * g.b_col]) : 0.0f;
    __syncthreads();
    for (int kk = 0; kk < kTile; ++kk) acc += a_s[ty][kk] * b_s[kk][tx];
    __syncthreads();
  }
  if (i < g.m && j < g.n) {
    float v = acc * g.alpha;
    if (bias) v += to_f32(bias[j * g.bias_stride]);
    c[int64_t{blockIdx.z} * g.c_batch + i * g.c_row + j * g.c_col] = from_f32<TC>(v);
  }
}

template <class TB, class TC>
void gemm(const Gemm& g, int64_t batch, const float* a, const TB* b, const TB* bias, TC* c, Stream stream) {
  const dim3 grid(static_cast<unsigned>(ceil_div(g.n, kTile)), static_cast<unsigned>(ceil_div(g.m, kTile)),
                  static_cast<unsigned>(batch));
  GPEN_LAUNCH(grid, kTile * kTile, 0, stream, gemm_kernel<TB, TC>)(g, a, b, bias, c);
}

// One [L, E] input (strides in elements) read as f32: plain[t] = x[l][e] (when plain is set) and
// with_pos[t] = x[l][e] + pos[l][e] (x alone without pos), t = l E + e. One launch per input keeps
// the kernel within 32 registers on sm_80.
struct Source {
  int64_t s_l, s_e;    // x's strides
  int64_t ps_l, ps_e;  // pos's strides
};

template <class T>
__global__ void __launch_bounds__(256)
    load_kernel(int64_t L, int64_t E, const Source s, const T* x, const T* pos, float* with_pos, float* plain) {
  for (int64_t t = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; t < L * E; t += int64_t{gridDim.x} * blockDim.x) {
    const int64_t l = t / E, e = t % E;
    const float v = to_f32(x[l * s.s_l + e * s.s_e]);
    if (plain) plain[t] = v;
    with_pos[t] = pos ? v + to_f32(pos[l * s.ps_l + e * s.ps_e]) : v;
  }
}

__global__ void __launch_bounds__(kWarpsPerBlock * 32) softmax_rows_kernel(int64_t rows, int64_t L, float* s) {
  const int lane = threadIdx.x % 32;
  for (int64_t r = int64_t{blockIdx.x} * kWarpsPerBlock + threadIdx.x / 32; r < rows;
       r += int64_t{gridDim.x} * kWarpsPerBlock) {
    float* row = s + r * L;
    float mx = -INFINITY;
    for (int64_t c = lane; c < L; c += 32) mx = fmaxf(mx, row[c]);
    mx = warp_max(mx);
    float sum = 0.0f;
    for (int64_t c = lane; c < L; c += 32) {
      row[c] = expf(row[c] - mx);
      sum += row[c];
    }
    const float inv = 1.0f / warp_sum(sum);
    for (int64_t c = lane; c < L; c += 32) row[c] *= inv;
  }
}

size_t floats(int64_t n) { return static_cast<size_t>((n + 63) / 64 * 64); }  // 256-byte multiples

}  // namespace

size_t attention_workspace_bytes(const AttentionParams& p, const Shape& x) {
  if (x.rank != 3 || p.heads <= 0) return 0;
  const int64_t L = x[1], E = x[2];
  return ((p.has_query ? 4 : 3) * floats(L * E) + floats(3 * L * E) + floats(p.heads * L * L)) * sizeof(float);
}

void attention(const AttentionParams& p, const AttentionArgs& a, const TensorView& y, void* workspace,
               Stream stream) {
  kernels::check_attention_shapes(p, a, y);
  const TensorView& x = *a.x;
  const DType dt = x.dtype;
  for (const TensorView* t : {a.x, a.pos, a.in_w, a.in_b, a.out_w, a.out_b, a.query, &y})
    if (t) check_view(*t, dt, "attention", t == &y ? "output" : "operand");
  const int64_t N = x.dim(0), L = x.dim(1), E = x.dim(2);
  if (x.numel() == 0) return;
  GPEN_CHECK(workspace != nullptr, "attention: no workspace");
  const int64_t H = p.heads, d = E / H;
  float* xq = static_cast<float*>(workspace);
  float* xv = xq + floats(L * E);
  float* ctx = xv + floats(L * E);
  float* qkv = ctx + floats(L * E);
  float* scores = qkv + floats(3 * L * E);
  float* xc = scores + floats(H * L * L);  // only with a query
  const int64_t ib = a.in_b->stride(0), ob = a.out_b->stride(0);
  dispatch_float(dt, "attention", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in_w = a.in_w->as<const T>();
    const T* in_b = a.in_b->as<const T>();
    for (int64_t n = 0; n < N; ++n) {
      const T* pos = nullptr;
      const T* query = nullptr;
      int64_t ps_l = 0, ps_e = 0;
      if (a.pos) {
        pos = a.pos->as<const T>() + (a.pos->dim(0) == 1 ? 0 : n) * a.pos->stride(0);
        ps_l = a.pos->stride(1), ps_e = a.pos->stride(2);
      }
      // xq = x + pos, xv = x; with a query, xc = query + pos.
      GPEN_LAUNCH(grid_for(L * E, 256), 256, 0, stream, load_kernel<T>)(
          L, E, Source{x.stride(1), x.stride(2), ps_l, ps_e}, x.as<const T>() + n * x.stride(0), pos, xq, xv);
      if (a.query) {
        query = a.query->as<const T>() + n * a.query->stride(0);
        GPEN_LAUNCH(grid_for(L * E, 256), 256, 0, stream, load_kernel<T>)(
            L, E, Source{a.query->stride(1), a.query->stride(2), ps_l, ps_e}, query, pos, xc, static_cast<float*>(nullptr));
      }
      // q and k: xq in_w[0:2E]^T (q: xc in_w[0:E]^T in a cross-attention); v: xv in_w[2E:3E]^T
      // (B[k][j] = in_w[j][k]).
      if (query) {
        gemm(Gemm{L, E, E, 0, E, 1, 0, 1, E, 0, 3 * E, 1, ib, 1.0f}, 1, xc, in_w, in_b, qkv, stream);
        gemm(Gemm{L, E, E, 0, E, 1, 0, 1, E, 0, 3 * E, 1, ib, 1.0f}, 1, xq, in_w + E * E, in_b + E * ib, qkv + E, stream);
      } else {
        gemm(Gemm{L, 2 * E, E, 0, E, 1, 0, 1, E, 0, 3 * E, 1, ib, 1.0f}, 1, xq, in_w, in_b, qkv, stream);
      }
      gemm(Gemm{L, E, E, 0, E, 1, 0, 1, E, 0, 3 * E, 1, ib, 1.0f}, 1, xv, in_w + 2 * E * E, in_b + 2 * E * ib,
           qkv + 2 * E, stream);
      // scores[h][i][j] = q_h[i] . k_h[j] / sqrt d  (B[k][j] = qkv[j][E + h d + k]).
      gemm(Gemm{L, L, d, d, 3 * E, 1, d, 1, 3 * E, L * L, L, 1, 0, 1.0f / sqrtf(static_cast<float>(d))}, H, qkv,
           qkv + E, static_cast<const float*>(nullptr), scores, stream);
      GPEN_LAUNCH(grid_for(H * L, kWarpsPerBlock), kWarpsPerBlock * 32, 0, stream, softmax_rows_kernel)(H * L, L, scores);
      // ctx[i][h d + j] = sum_k scores[h][i][k] v_h[k][j].
      gemm(Gemm{L, d, L, L * L, L, 1, d, 3 * E, 1, d, E, 1, 0, 1.0f}, H, scores, qkv + 2 * E,
           static_cast<const float*>(nullptr), ctx, stream);
      gemm(Gemm{L, E, E, 0, E, 1, 0, 1, E, 0, y.stride(1), y.stride(2), ob, 1.0f}, 1, ctx, a.out_w->as<const T>(),
           a.out_b->as<const T>(), y.as<T>() + n * y.stride(0), stream);
    }
  });
  check_launch("attention");
}

GPEN_CUDA_NAMESPACE_END
