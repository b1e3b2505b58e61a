// The to_rgb modconv as dot products over channels (overview: modconv_rgb.h): the folded weight
// per sample (in the workspace), and the parallel loop over output rows, which forwards to the copy
// of modconv_rgb_kernel.cpp for the ISA in use.
#include "kernels/cpu/modconv_rgb.h"

#include <omp.h>

#include <algorithm>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/weights8.h"

#ifndef GPEN_HAVE_AVX512_KERNELS
#define GPEN_HAVE_AVX512_KERNELS 0
#endif

namespace gpen::cpu::modconv_rgb {

namespace {

int64_t round16(int64_t v) { return (v + 15) / 16 * 16; }

int64_t per_sample_floats(int64_t C1, int64_t C2) { return kMaxCo * (round16(C1) + round16(C2)) + 2 * kMaxCo; }

}  // namespace

size_t rgb_workspace_bytes(const Shape& x_cat, const Shape& y) {
  // The split of x_cat's channels into x and x2 is not known here: C1p + C2p <= C + 32.
  const int64_t per = kMaxCo * (round16(x_cat[3]) + 16) + 2 * kMaxCo;
  return static_cast<size_t>(y[0] * per + round16(x_cat[3])) * sizeof(float) + detail::kScratchAlign;
}

bool modconv_rgb(const ModConvParams& p, const ModConvArgs& a, const TensorView& y, void* workspace) {
  const TensorView& x = *a.x;
  const TensorView& w = *a.w;
  if (x.stride(3) != 1 || (a.x2 && a.x2->stride(3) != 1) || !workspace) return false;
  RgbArgs r;
  const int64_t N = y.dim(0);
  r.H = y.dim(1), r.W = y.dim(2), r.Co = y.dim(3);
  r.C1 = x.dim(3), r.C2 = a.x2 ? a.x2->dim(3) : 0;
  r.C1p = round16(r.C1);
  r.wstride = r.C1p + round16(r.C2);
  r.wm_per_sample = per_sample_floats(r.C1, r.C2);
  r.x = x.f32(), r.xs0 = x.dim(0) == 1 ? 0 : x.stride(0), r.xs1 = x.stride(1), r.xs2 = x.stride(2);
  float* base = detail::align_ptr(workspace);
  float* b2 = base;
  float* wm = base + round16(r.C2 + 1);
  if (a.x2) {
    const TensorView& x2 = *a.x2;
    r.x2 = x2.f32(), r.x2s0 = x2.stride(0), r.x2s1 = x2.stride(1), r.x2s2 = x2.stride(2);
    r.x2_scale = a.x2_scale->f32()[0];
    r.x2_slope = p.x2_act.slope;
    const int64_t bs = a.x2_bias->stride(a.x2_bias->rank() - 1);
    for (int64_t c = 0; c < r.C2; ++c) b2[c] = a.x2_bias->f32()[c * bs];
  }
  r.b2 = b2;
  // The folded weight of each sample: s (and the noise gain) times W, zero in the padding and
  // for output channels past Co; then d and the bias.
  for (int64_t n = 0; n < N; ++n) {
    float* wn = wm + n * r.wm_per_sample;
    std::fill(wn, wn + r.wm_per_sample, 0.0f);
    const float* sp = a.s->f32() + n * a.s->stride(0);
    const int64_t ss = a.s->stride(1);
    float row[kMaxCo];
    for (int64_t c = 0; c < r.C1 + r.C2; ++c) {
      detail::load_weight_row(row, w, c * w.stride(2), w.stride(3), 0, r.Co, r.Co, c);
      const bool noise = c >= r.C1;
      const float sc = sp[c * ss] * (noise ? p.x2_act.gain : 1.0f);
      const int64_t col = noise ? r.C1p + (c - r.C1) : c;
      for (int64_t o = 0; o < r.Co; ++o) wn[o * r.wstride + col] = sc * row[o];
    }
    float* dv = wn + kMaxCo * r.wstride;
    float* bv = dv + kMaxCo;
    for (int64_t o = 0; o < r.Co; ++o) {
      dv[o] = a.d ? a.d->f32()[n * a.d->stride(0) + o * a.d->stride(1)] : 1.0f;
      bv[o] = a.bias ? a.bias->f32()[o * a.bias->stride(a.bias->rank() - 1)] : 0.0f;
    }
  }
  r.wm = wm;
  if (a.residual) {
    const TensorView& rv = *a.residual;
    r.res = rv.f32(), r.rs0 = rv.stride(0), r.rs1 = rv.stride(1), r.rs2 = rv.stride(2), r.rs3 = rv.stride(3);
  }
  r.y = y.f32(), r.ys0 = y.stride(0), r.ys1 = y.stride(1), r.ys2 = y.stride(2), r.ys3 = y.stride(3);
  r.gpos = p.act.gain, r.gneg = p.act.gain * p.act.slope;

  const bool wide = GPEN_HAVE_AVX512_KERNELS && cpu_isa() == Isa::avx512;
  const int64_t rows = N * r.H;
  // Chunks of at least ~64K input floats (256 KB read, tens of microseconds) keep the thread
  // start-up small against the work. Counted in pixels alone (4K a chunk) GPEN-256's 64x64 and
  // 32x32 layers, 256 and 512 channels, were one chunk and ran on one thread at half the bus.
  const int64_t row_floats = std::max<int64_t>(1, r.W * (r.C1 + r.C2));
  const int64_t rows_per = std::max<int64_t>(1, (int64_t{1} << 16) / row_floats);
  const int64_t nchunk = (rows + rows_per - 1) / rows_per;
  const int nt = static_cast<int>(std::min<int64_t>(std::max(1, num_threads()), nchunk));
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
  for (int64_t ch = 0; ch < nchunk; ++ch) {
    const int64_t q0 = ch * rows_per, q1 = std::min(rows, q0 + rows_per);
    for (int64_t q = q0; q < q1;) {
      const int64_t n = q / r.H, r0 = q % r.H, r1 = std::min(r.H, r0 + (q1 - q));
#if GPEN_HAVE_AVX512_KERNELS
      if (wide) {
        isa_avx512::rgb_rows(r, n, r0, r1);
        q += r1 - r0;
        continue;
      }
#endif
      (void)wide;
      isa_base::rgb_rows(r, n, r0, r1);
      q += r1 - r0;
    }
  }
  return true;
}

}  // namespace gpen::cpu::modconv_rgb
