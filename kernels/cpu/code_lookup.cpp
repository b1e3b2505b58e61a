// The nearest codebook entry per feature vector (kernels/params.h CodeLookupParams): CodeFormer's
// top-1 of its code logits, or VQGAN's quantizer's minimum distance, then the entry gathered.
// Ties keep the first index (strict comparisons), as torch.argmax / argmin. The distances are
// summed in double, so the winner is the truly nearest entry unless two are within double's
// rounding; an exact duplicate of an entry always loses to the first. No fused multiply-adds, so
// the CUDA twin, summing in the same order, picks the same entries.
#include <omp.h>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/strided.h"
#include "kernels/cpu/transformer_shapes.h"
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

namespace gpen::cpu {

void code_lookup(const CodeLookupParams& p, const TensorView& z, const TensorView& codebook, const TensorView& y,
                 const TensorView& indices) {
  detail::check_f32(z, "code_lookup", "input");
  detail::check_f32(codebook, "code_lookup", "codebook");
  detail::check_f32(y, "code_lookup", "output");
  kernels::check_code_lookup_shapes(p, z, codebook, y, indices);
  const int64_t N = z.dim(0), H = z.dim(1), W = z.dim(2), K = codebook.dim(0), C = codebook.dim(1);
  const bool argmax = p.mode == CodeLookup::argmax;
  const int64_t zc = z.stride(3), kr = codebook.stride(0), kc = codebook.stride(1), yc = y.stride(3);
  const int T = N * H * W * K * (argmax ? 1 : C) >= detail::kParallelMinElements ? num_threads() : 1;
#pragma omp parallel for collapse(3) num_threads(T) if (T > 1) schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t w = 0; w < W; ++w) {
        const float* zp = z.f32() + n * z.stride(0) + h * z.stride(1) + w * z.stride(2);
        int64_t best = 0;
        if (argmax) {
          for (int64_t k = 1; k < K; ++k)
            if (zp[k * zc] > zp[best * zc]) best = k;
        } else {
          double zz = 0.0;
          for (int64_t c = 0; c < C; ++c) zz += static_cast<double>(zp[c * zc]) * zp[c * zc];
          double best_d = 0.0;
          int64_t k = 0;
          // Four entries at a time: four independent chains of the same sums, compared in order.
          for (; k + 4 <= K; k += 4) {
            const float* e = codebook.f32() + k * kr;
            double ee[4] = {}, ze[4] = {};
            for (int64_t c = 0; c < C; ++c) {
              const double zv = zp[c * zc];
              for (int j = 0; j < 4; ++j) {
                const double ev = e[j * kr + c * kc];
                ee[j] += ev * ev;
                ze[j] += zv * ev;
              }
            }
            for (int j = 0; j < 4; ++j) {
              const double dist = zz + ee[j] - 2.0 * ze[j];
              if (k + j == 0 || dist < best_d) best = k + j, best_d = dist;
            }
          }
          for (; k < K; ++k) {
            const float* e = codebook.f32() + k * kr;
            double ee = 0.0, ze = 0.0;
            for (int64_t c = 0; c < C; ++c) {
              ee += static_cast<double>(e[c * kc]) * e[c * kc];
              ze += static_cast<double>(zp[c * zc]) * e[c * kc];
            }
            const double dist = zz + ee - 2.0 * ze;
            if (k == 0 || dist < best_d) best = k, best_d = dist;
          }
        }
        indices.as<int32_t>()[n * indices.stride(0) + h * indices.stride(1) + w * indices.stride(2)] =
            static_cast<int32_t>(best);
        float* yp = y.f32() + n * y.stride(0) + h * y.stride(1) + w * y.stride(2);
        for (int64_t c = 0; c < C; ++c) yp[c * yc] = codebook.f32()[best * kr + c * kc];
      }
    }
  }
}

}  // namespace gpen::cpu
