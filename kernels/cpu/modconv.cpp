// Modulated convolution (StyleGAN2) in the decomposed form of kernels/params.h:
//   acc = conv(x_cat * s[n, :], W) ;  y = act(acc * d[n, o] + bias[o]) + residual
// It carries nearly all of GPEN's FLOPs, so it is an implicit GEMM with a register-blocked
// micro-kernel (AVX2/FMA, or AVX-512 where the CPU has it: kernels/cpu/isa.h) rather than
// im2col + a library GEMM:
//  - the output is cut into tasks of ~kTilePixels output pixels (x one output-channel chunk); a
//    task first writes the input rectangle it reads (its "band", halo included) into the thread's
//    workspace with the prologue applied: x * s, act2(x2 * scale + bias2) * s, zeros outside the
//    image. This is the virtual concat: the concatenated input never exists as a whole;
//  - the GEMM then reads A straight from the band: the row of output pixel p for tap (ky, kx) is
//    the band pixel under that tap, so im2col costs nothing; B is the HWIO weight, whose rows
//    (ky, kx, i) are the GEMM's K axis, packed once per call into 16-column panels (read in
//    place for tiny outputs, see make_plan). K is walked in blocks of <= 256 (kKcMax) so a
//    block's B panel slice stays in L1 while the 6x16 (6x32 on AVX-512) micro-kernel runs over
//    the tile's pixels;
//  - the transposed (up) conv is the same machinery by output phase: output (2a + py, 2b + px)
//    gathers the taps ky = py (mod 2), kx = px (mod 2) from input (a - (ky - py) / 2, ...), so
//    every output is written exactly once (no scatter-add, no zero fill, no races); a row crop
//    (ModConvParams::crop_top, a band of a banded graph) only changes each phase's taps and first
//    input row (modconv_plan.cpp).
// Workspace: the weight packed once per call into 16-column panels (K x Cout floats, shared by
// the threads), and per thread a band and an accumulator tile (a few hundred KB). None of it
// grows with the image.
// The parts: kernels/cpu/modconv_internal.h.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/modconv_internal.h"
#include "kernels/cpu/modconv_rgb.h"
#include "kernels/cpu/weights8.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/range_steal.h"
#include "kernels/cpu/winograd.h"
#include "kernels/cpu/winograd_up.h"
#include "kernels/modconv_check.h"

#ifndef GPEN_HAVE_AVX512_KERNELS
#define GPEN_HAVE_AVX512_KERNELS 0
#endif

namespace gpen::cpu {

using namespace modconv_detail;

namespace {

constexpr size_t kAlign = 64;           // the workspace pointer is aligned up to this inside

float* align_up(void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<float*>((v + kAlign - 1) / kAlign * kAlign);
}


void validate(const ModConvParams& p, const ModConvArgs& a, const TensorView& y) {
  check_modconv_inputs(p, a);
  auto f32 = [](const TensorView* v, const char* what) {
    if (v) GPEN_CHECK(v->dtype == DType::f32, std::string("modconv: ") + what + " must be f32 on the CPU");
  };
  f32(a.x, "x"), f32(a.x2, "x2"), f32(a.x2_scale, "x2_scale"), f32(a.x2_bias, "x2_bias");
  if (a.w) detail::check_weight_f32_or_8bit(*a.w, "modconv");
  f32(a.s, "s"), f32(a.d, "d"), f32(a.bias, "bias"), f32(a.residual, "residual"), f32(&y, "y");
  check_modconv_shapes(p, a, y);
}

}  // namespace

size_t modconv_workspace_bytes(const ConvChoice& c, const ModConvParams& p, const Shape& x_cat, const Shape& y,
                               int threads) {
  GPEN_CHECK(x_cat.rank == 4 && y.rank == 4,
             "modconv: workspace query needs NHWC shapes, got " + x_cat.str() + " and " + y.str());
  const int nt = threads > 0 ? threads : std::max(1, num_threads());  // must match the run's thread count
  switch (c.path) {
    case ConvPath::winograd:
    case ConvPath::winograd_fused:
      return winograd_detail::modconv_winograd_workspace_bytes(c, x_cat, y, nt);
    case ConvPath::winograd_up:
    case ConvPath::winograd_up_fused:
      return winograd_detail::modconv_winograd_up_workspace_bytes(c, x_cat, y, nt);
    case ConvPath::to_rgb:
      // Its own or the direct path's, whichever is more: the figure does not depend on the path.
      return std::max(modconv_direct_workspace_bytes(p, x_cat, y, nt, c.weight_tiles),
                      modconv_rgb::rgb_workspace_bytes(x_cat, y));
    default:
      return modconv_direct_workspace_bytes(p, x_cat, y, nt, c.weight_tiles);
  }
}

size_t modconv_workspace_bytes(const ModConvParams& p, const Shape& x_cat, const Shape& y, int threads,
                               const CpuOptions& o) {
  return modconv_workspace_bytes(choose_conv(modconv_case(p, x_cat, y), o), p, x_cat, y, threads);
}

namespace {

void run(const ConvChoice& c, const ModConvParams& p, const ModConvArgs& a, const TensorView& y, void* workspace) {
  switch (c.path) {
    case ConvPath::winograd:
    case ConvPath::winograd_fused:
      return winograd_detail::modconv_winograd(c, p, a, y, workspace);
    case ConvPath::winograd_up:
    case ConvPath::winograd_up_fused:
      return winograd_detail::modconv_winograd_up(c, p, a, y, workspace);
    case ConvPath::to_rgb:
      GPEN_CHECK(modconv_rgb::modconv_rgb(p, a, y, workspace),
                 "modconv: the to_rgb path needs a workspace and unit channel strides");
      return;
    default:
      return modconv_detail::modconv_direct(p, a, y, workspace, c.weight_tiles);
  }
}

}  // namespace

void modconv(const ConvChoice& c, const ModConvParams& p, const ModConvArgs& a, const TensorView& y, void* workspace) {
  validate(p, a, y);
  run(c, p, a, y, workspace);
}

void modconv(const ModConvParams& p, const ModConvArgs& a, const TensorView& y, void* workspace, const CpuOptions& o) {
  validate(p, a, y);
  run(choose_conv(modconv_case(p, a, y), o), p, a, y, workspace);
}

size_t modconv_detail::modconv_direct_workspace_bytes(const ModConvParams& p, const Shape& x_cat, const Shape& y,
                                                      int threads, bool weight_tiles) {
  const int nt = threads > 0 ? threads : std::max(1, num_threads());
  const Plan pl = make_plan(p, y[0], x_cat[1], x_cat[2], x_cat[3], y[3], nt, weight_tiles);
  return static_cast<size_t>(pl.shared + pl.per_thread * nt) * sizeof(float) + kAlign;
}

void modconv_detail::modconv_direct(const ModConvParams& p, const ModConvArgs& a, const TensorView& y,
                                    void* workspace, bool weight_tiles) {
  // The workspace holds one slice per thread: it must have been sized with the same thread count.
  const int nt_req = std::max(1, num_threads());
  Plan pl = make_plan(p, y.dim(0), a.x->dim(1), a.x->dim(2), a.w->dim(2), a.w->dim(3), nt_req, weight_tiles);
  pl.C1 = a.x->dim(3);
  pl.C2 = pl.C - pl.C1;
  const int nt = static_cast<int>(std::min<int64_t>(nt_req, std::max(pl.ntask, pl.npanel)));
  GPEN_CHECK(workspace != nullptr, "modconv: missing workspace");

  Inputs in{*a.x, a.x2, *a.w, *a.s, a.d, a.bias, a.residual};
  if (a.x2) {
    in.x2_scale = a.x2_scale->f32()[0];
    in.x2_bias = a.x2_bias->f32();
    in.x2_bias_stride = a.x2_bias->stride(a.x2_bias->rank() - 1);
  }
  const bool up = p.up;
  // act(v) = v * (v < 0 ? gneg : gpos)
  const float gpos = p.act.gain, gneg = p.act.gain * p.act.slope;
  float* const packed = align_up(workspace);
  float* const thread_base = packed + pl.shared;
  const int ntap = pl.k * pl.k;
  const bool wide = GPEN_HAVE_AVX512_KERNELS && cpu_isa() == Isa::avx512;
  const int64_t ws3 = in.w.stride(3);
  const bool w8 = dtype_is_8bit_weight(in.w.dtype);  // direct mode then copies one panel at a time

  RangeSteal tasks;
  tasks.reset(pl.ntask, nt);

#pragma omp parallel num_threads(nt)
  {
    // Pack the weight once per call: panel x tap pieces split between the threads.
#pragma omp for schedule(static)
    for (int64_t piece = 0; piece < (pl.direct_b ? 0 : pl.npanel * ntap); ++piece) {
      const int t = static_cast<int>(piece % ntap);
      pack_weight(pl, in.w, piece / ntap, t, t + 1, packed);
    }  // implicit barrier: every panel is ready before any task runs

    float* ws = thread_base + static_cast<int64_t>(omp_get_thread_num()) * pl.per_thread;
    float* band = ws + pl.off_band;
    float* ctile = ws + pl.off_ctile;
    float* bpack = ws + pl.off_bpack;
    const float* bseg[kMaxSeg];
    float* sv = ws + pl.off_svec;    // s[n, :]
    float* b2v = ws + pl.off_b2vec;  // x2 biases, then s[n, C1:] * gain2 (see noise_row)
    float* gs2 = b2v + pl.C2;
    float* dv = ws + pl.off_dvec;
    float* bv = ws + pl.off_bvec;
    float* row = ws + pl.off_row;  // one pixel of a strided input
    const int64_t ldc = pl.co_chunk;
    int64_t last_n = -1;
    for (int64_t c = 0; c < pl.C2; ++c) b2v[c] = in.x2_bias[c * in.x2_bias_stride];

    // Tasks in raster order, each thread from its own share of the image (range_steal.h).
    const int me = omp_get_thread_num();
    for (int64_t task; (task = tasks.next(me)) >= 0;) {
      int64_t rest = task;
      const int64_t tco = rest % pl.ntask_co;
      rest /= pl.ntask_co;
      const int64_t tbi = rest % pl.ntask_b;
      rest /= pl.ntask_b;
      const int64_t tai = rest % pl.ntask_a;
      const int64_t n = rest / pl.ntask_a;
      const int64_t a0 = tai * pl.ta, b0 = tbi * pl.tb;
      const int64_t o0 = tco * pl.co_chunk, o_end = std::min(pl.Co, o0 + pl.co_chunk);
      const int64_t nco = o_end - o0;

      if (n != last_n) {
        const float* sp = in.s.f32() + n * in.s.stride(0);
        for (int64_t c = 0; c < pl.C; ++c) sv[c] = sp[c * in.s.stride(1)];
        for (int64_t c = 0; c < pl.C2; ++c) gs2[c] = sv[pl.C1 + c] * p.x2_act.gain;
        last_n = n;
      }
      const int64_t ry0 = a0 + pl.mindy, rx0 = b0 + pl.mindx;
      fill_band(pl, p, in, n, ry0, rx0, band, sv, b2v, gs2, row);
      for (int64_t o = 0; o < nco; ++o) {
        dv[o] = in.d ? in.d->f32()[n * in.d->stride(0) + (o0 + o) * in.d->stride(1)] : 1.0f;
        bv[o] = in.bias ? in.bias->f32()[(o0 + o) * in.bias->stride(in.bias->rank() - 1)] : 0.0f;
      }

      for (int iph = 0; iph < pl.nphase; ++iph) {
        const Phase& ph = pl.phases[iph];
        const int64_t a1 = std::min(a0 + pl.ta, ph.na), b1 = std::min(b0 + pl.tb, ph.nb);
        if (a1 <= a0 || b1 <= b0) continue;
        const int64_t wa = a1 - a0, wb = b1 - b0, M = wa * wb;
        const int64_t mtiles = (M + kMR - 1) / kMR;
        // Band offset of every micro-tile row; the tail micro-tile repeats its last pixel and its
        // extra rows are ignored.
        int64_t base[round_up(std::max(kTilePixels, kTilePixelsWeightTiles), kMR)];
        for (int64_t m = 0; m < mtiles * kMR; ++m) {
          const int64_t q = std::min(m, M - 1);
          base[m] = ((a0 + q / wb - ry0) * pl.band_w + (b0 + q % wb - rx0)) * pl.cs;
        }
        KBlocker blocker(ph, pl.k, pl.C, pl.cs, pl.band_w);
        KBlock kb;
        bool first = true;
        while (blocker.next(kb)) {
          for (int64_t j = 0; j < nco;) {
            // Two panels per call on AVX-512 where both exist (read in place: both whole; 8-bit
            // weight tiles: both dequantised, one after the other in bpack).
            const bool tiles8 = pl.weight_tiles && w8;
            const bool pair = wide && j + kNR < nco &&
                              (!pl.direct_b || tiles8 || (!w8 && o0 + j + 2 * kNR <= pl.Co && ws3 == 1));
            const int64_t ldb = b_rows(pl, kb, in.w, o0 + j, packed, bpack, bseg);
            int64_t next = pl.direct_b ? kNR : pl.kdim * kNR;  // one panel to the next
            if (tiles8) {
              next = int64_t{kKcMax} * kNR;
              const float* bseg2[kMaxSeg];
              if (pair) b_rows(pl, kb, in.w, o0 + j + kNR, packed, bpack + next, bseg2);
            }
            const int64_t step = pair ? 2 * kNR : kNR;
            // The first micro-tile also prefetches the next panel's rows of this block (not where
            // the rows are dequantised per block: the next ones are not written yet).
            const int64_t pf = j + step < nco && !tiles8 ? (pair ? 2 * next : next) : 0;
            for (int64_t mt = 0; mt < mtiles; ++mt) {
              float* ct = ctile + mt * kMR * ldc + j;
#if GPEN_HAVE_AVX512_KERNELS
              if (pair) {
                isa_avx512::micro_kernel(kb, band, base + mt * kMR, bseg, ldb, next, mt == 0 ? pf : 0, ct, ldc, !first);
                continue;
              }
#endif
              isa_base::micro_kernel(kb, band, base + mt * kMR, bseg, ldb, 8, mt == 0 ? pf : 0, ct, ldc, !first);
            }
            j += step;
          }
          first = false;
        }
        if (first)  // a phase without taps (up with k = 1): its outputs are zero
          std::memset(ctile, 0, sizeof(float) * mtiles * kMR * ldc);

        // Epilogue: from the accumulator tile into the (possibly strided) output.
        const int64_t st = pl.stride;
        const int64_t ys = y.stride(3);
        for (int64_t m = 0; m < M; ++m) {
          const int64_t oy = st * (a0 + m / wb) + ph.py, ox = st * (b0 + m % wb) + ph.px;
          const float* cr = ctile + m * ldc;
          float* yr = y.f32() + n * y.stride(0) + oy * y.stride(1) + ox * y.stride(2) + o0 * ys;
          if (up) {
            if (ys == 1)
              std::memcpy(yr, cr, sizeof(float) * nco);
            else
              for (int64_t o = 0; o < nco; ++o) yr[o * ys] = cr[o];
            continue;
          }
          const float* rr = nullptr;
          int64_t rs = 1;
          if (in.residual) {
            const TensorView& r = *in.residual;
            rr = r.f32() + n * r.stride(0) + oy * r.stride(1) + ox * r.stride(2) + o0 * r.stride(3);
            rs = r.stride(3);
          }
          if (ys == 1 && rs == 1) {
            epilogue_row(yr, cr, dv, bv, rr, gpos, gneg, nco);
          } else {
            for (int64_t o = 0; o < nco; ++o) {
              const float v = cr[o] * dv[o] + bv[o];
              yr[o * ys] = v * (v < 0.0f ? gneg : gpos) + (rr ? rr[o * rs] : 0.0f);
            }
          }
        }
      }
    }
  }
}

}  // namespace gpen::cpu
