// Multi-head self-attention as nn.MultiheadAttention computes it for CodeFormer's
// TransformerSALayer, and the cross-attention of RestoreFormer++'s MultiHeadAttnBlock (queries
// from another sequence; kernels/params.h AttentionParams). One sample at a time, every buffer
// carved from the workspace:
//   in-projection   [L, E] x [3E, E]^T (the dense layer's row blocks, dense_isa.h: blocks of
//                                       outputs over the threads, each weight panel packed once)
//   scores          [L, d] x [d, L]    per head, into the [heads, L, L] score matrix
//   softmax rows of the scores (max-subtracted, normaliser in double, as kernels/cpu/softmax.cpp,
//                                but on exp_simd.h's vectorised exp)
//   context         [L, L] x [L, d]    per head, written into its d columns of [L, E]
//   out-projection  [L, E] x [E, E]^T  (as the in-projection)
// The per-head products run on the Eigen-backed GEMM (kernels/cpu/gemm.h), the heads on the
// threads one head each, each with its own GEMM packing buffer. At
// CodeFormer's L = 256, E = 512, 8 heads the score matrix is 2 MiB; a tiled form (flash-style:
// 64 query rows x 64 keys at a time with a running max and sum per row) would keep it to
// 16 KiB per thread, at the price of the second exp pass being fused into the PV product.
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "kernels/cpu/dense_isa.h"
#include "kernels/cpu/exp_simd.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/strided.h"
#include "kernels/cpu/transformer_shapes.h"

namespace gpen::cpu {

namespace {

struct Layout {
  int64_t L, E, d, heads;
  size_t xq, xv, xc, qkv, kt, scores, ctx, out, pack;  // floats, each 64-byte rounded
  detail::GemmBlocking blk;
  size_t pack_each;
  size_t total() const { return xq + xv + xc + qkv + kt + scores + ctx + out + pack + detail::kScratchAlign / 4; }
};

Layout layout(const AttentionParams& p, int64_t L, int64_t E, int threads) {
  Layout s{};
  s.L = L, s.E = E, s.heads = p.heads, s.d = E / std::max(p.heads, 1);
  const auto r = [](int64_t n) { return detail::round_floats(static_cast<size_t>(n)); };
  s.xq = r(L * E), s.xv = r(L * E), s.qkv = r(L * 3 * E);
  s.xc = p.has_query ? r(L * E) : 0;
  s.kt = r(E * L), s.scores = r(p.heads * L * L), s.ctx = r(L * E), s.out = r(L * E);
  s.blk = detail::gemm_blocking(L, L, std::max(E, L));
  s.pack_each = r(static_cast<int64_t>(detail::gemm_pack_floats(s.blk)));
  s.pack = s.pack_each * static_cast<size_t>(std::max(threads, 1));
  return s;
}

// dst[j][i] = src[i][j] for a rows x cols source with leading dimension lds.
void transpose(float* dst, const float* src, int64_t rows, int64_t cols, int64_t lds) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) dst[j * rows + i] = src[i * lds + j];
}

// Columns [o0, o0 + nw) of y (leading dimension ldy) = x w[o0 + j]^T + bias[o0 + j] over the L
// rows of x (leading dimension E); w row-major [*, E].
void project(const detail::DenseBlockFn block, const float* x, int64_t L, int64_t E, const float* w,
             const TensorView& bias, float* y, int64_t ldy, int64_t o0, int64_t nw) {
  block(x, E, w + o0 * E, E, y + o0, ldy, L, E, nw);
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < nw; ++j) y[i * ldy + o0 + j] += bias.f32()[(o0 + j) * bias.stride(0)];
}

}  // namespace

size_t attention_workspace_bytes(const AttentionParams& p, const Shape& x, int threads) {
  if (x.rank != 3 || p.heads <= 0) return 0;
  return layout(p, x[1], x[2], threads).total() * sizeof(float);
}

void attention(const AttentionParams& p, const AttentionArgs& a, const TensorView& y, void* workspace) {
  kernels::check_attention_shapes(p, a, y);
  const TensorView& x = *a.x;
  for (const TensorView* t : {a.x, a.pos, a.in_w, a.in_b, a.out_w, a.out_b, a.query, &y})
    if (t) detail::check_f32(*t, "attention", t == &y ? "output" : "operand");
  const int64_t N = x.dim(0), L = x.dim(1), E = x.dim(2);
  if (x.numel() == 0) return;
  GPEN_CHECK(workspace != nullptr, "attention: no workspace");

  const int T = num_threads();
  const Layout s = layout(p, L, E, T);
  float* base = detail::align_ptr(workspace);
  float* xq = base;             // x + pos (queries and keys)
  float* xv = xq + s.xq;        // x (values)
  float* xc = xv + s.xv;        // query + pos (the queries of a cross-attention)
  float* qkv = xc + s.xc;       // [L, 3E]
  float* kt = qkv + s.qkv;      // per head [d, L]: its keys transposed
  float* scores = kt + s.kt;    // [heads, L, L]
  float* ctx = scores + s.scores;
  float* out = ctx + s.ctx;
  float* pack = out + s.out;
  const int64_t d = s.d, H = p.heads;
  const detail::DenseBlockFn block = detail::dense_block_fn();
  // Output blocks of the projections, none across the q / k / v thirds.
  const int64_t bw = detail::dense_width(), per_third = (E + bw - 1) / bw;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));

  for (int64_t n = 0; n < N; ++n) {
    for (int64_t l = 0; l < L; ++l)
      for (int64_t e = 0; e < E; ++e) {
        const float v = x.f32()[n * x.stride(0) + l * x.stride(1) + e * x.stride(2)];
        const float pe = a.pos ? a.pos->f32()[(a.pos->dim(0) == 1 ? 0 : n) * a.pos->stride(0) + l * a.pos->stride(1) +
                                              e * a.pos->stride(2)]
                               : 0.0f;
        xv[l * E + e] = v;
        xq[l * E + e] = a.pos ? v + pe : v;
        if (a.query) {
          const float qv = a.query->f32()[n * a.query->stride(0) + l * a.query->stride(1) + e * a.query->stride(2)];
          xc[l * E + e] = a.pos ? qv + pe : qv;
        }
      }
#pragma omp parallel num_threads(T)
    {
      float* pk = pack + s.pack_each * static_cast<size_t>(omp_get_thread_num());
      // q and k from x + pos (q from query + pos in a cross-attention), v from x: the first
      // 2E columns and the last E.
#pragma omp for schedule(static)
      for (int64_t b = 0; b < 3 * per_third; ++b) {
        const int64_t third = b / per_third, o0 = third * E + (b % per_third) * bw;
        const float* src = third == 2 ? xv : third == 0 && a.query ? xc : xq;
        project(block, src, L, E, a.in_w->f32(), *a.in_b, qkv, 3 * E, o0, std::min(bw, (third + 1) * E - o0));
      }
#pragma omp for schedule(static)
      for (int64_t h = 0; h < H; ++h) {
        float* kh = kt + h * d * L;
        transpose(kh, qkv + E + h * d, L, d, 3 * E);
        float* sc = scores + h * L * L;
        std::fill(sc, sc + L * L, 0.0f);
        detail::sgemm_acc(L, L, d, qkv + h * d, 3 * E, kh, L, sc, L, s.blk, pk);
        for (int64_t i = 0; i < L; ++i) {
          float* row = sc + i * L;
          float mx = row[0] * scale;
#pragma omp simd reduction(max : mx)
          for (int64_t j = 0; j < L; ++j) mx = std::max(mx, row[j] * scale);
          double sum = 0.0;
#pragma omp simd reduction(+ : sum)
          for (int64_t j = 0; j < L; ++j) {
            row[j] = exp_simd(row[j] * scale - mx);
            sum += row[j];
          }
          const float inv = static_cast<float>(1.0 / sum);
          for (int64_t j = 0; j < L; ++j) row[j] *= inv;
        }
        float* ch = ctx + h * d;
        for (int64_t i = 0; i < L; ++i) std::fill(ch + i * E, ch + i * E + d, 0.0f);
        detail::sgemm_acc(L, d, L, sc, L, qkv + 2 * E + h * d, 3 * E, ch, E, s.blk, pk);
      }
#pragma omp for schedule(static)
      for (int64_t b = 0; b < per_third; ++b)
        project(block, ctx, L, E, a.out_w->f32(), *a.out_b, out, E, b * bw, std::min(bw, E - b * bw));
    }
    for (int64_t l = 0; l < L; ++l)
      for (int64_t e = 0; e < E; ++e) y.f32()[n * y.stride(0) + l * y.stride(1) + e * y.stride(2)] = out[l * E + e];
  }
}

}  // namespace gpen::cpu
