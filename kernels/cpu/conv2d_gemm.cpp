// conv2d's implicit-im2col GEMM path: output pixels gathered from the NHWC input straight into
// the packed panels of Eigen's GEBP kernel (padding read as zeros), weight blocks packed for it,
// and one work item (a pixel tile x output-channel blocks) multiplied and finished.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/conv2d_paths.h"
#include "kernels/cpu/weights8.h"
#include "kernels/cpu/gemm.h"

namespace gpen::cpu::detail {

namespace {

// dst[c * 4 + j] = src[j][c] for c < len: four pixel rows interleaved channel by channel (the
// packed panel layout for a panel width of 4), 4x8 transposes in registers.
void interleave4(float* dst, const float* const* src, int64_t len) {
  int64_t c = 0;
  for (; c + 8 <= len; c += 8, dst += 32) {
    const v8f r0 = load8(src[0] + c), r1 = load8(src[1] + c), r2 = load8(src[2] + c), r3 = load8(src[3] + c);
    const v8f t0 = __builtin_shufflevector(r0, r1, 0, 8, 1, 9, 4, 12, 5, 13);
    const v8f t1 = __builtin_shufflevector(r0, r1, 2, 10, 3, 11, 6, 14, 7, 15);
    const v8f t2 = __builtin_shufflevector(r2, r3, 0, 8, 1, 9, 4, 12, 5, 13);
    const v8f t3 = __builtin_shufflevector(r2, r3, 2, 10, 3, 11, 6, 14, 7, 15);
    store8(dst, __builtin_shufflevector(t0, t2, 0, 1, 8, 9, 2, 3, 10, 11));
    store8(dst + 8, __builtin_shufflevector(t1, t3, 0, 1, 8, 9, 2, 3, 10, 11));
    store8(dst + 16, __builtin_shufflevector(t0, t2, 4, 5, 12, 13, 6, 7, 14, 15));
    store8(dst + 24, __builtin_shufflevector(t1, t3, 4, 5, 12, 13, 6, 7, 14, 15));
  }
  for (; c < len; ++c, dst += 4)
    for (int j = 0; j < 4; ++j) dst[j] = src[j][c];
}

// Packs rows [p0, p0+m) x depth [k0, k1) of group grp's im2col matrix (depth index k is tap
// k / cin_g, channel k % cin_g) into the GEBP row-panel layout (see kernels/cpu/gemm.h), reading
// the input directly; taps that fall into the padding read as zeros.
void pack_pixels(const Args& a, int64_t grp, int64_t p0, int64_t m, int64_t k0, int64_t k1, float* dst) {
  const Geom& g = a.g;
  const Conv2dParams& p = *a.p;
  const TensorView& x = *a.x;
  const int64_t kd = k1 - k0, xcs = x.stride(3);
  const int P = detail::gemm_row_panel();  // <= detail::kMaxRowPanel
  const float* xg = x.f32() + grp * g.cin_g * xcs;
  PixelCursor cur(p0, g.Ho, g.Wo);
  const float* src[detail::kMaxRowPanel];
  int64_t iy0[detail::kMaxRowPanel], ix0[detail::kMaxRowPanel], nofs[detail::kMaxRowPanel];
  for (int64_t i = 0; i < m;) {
    // A full panel of P pixels, or a single leftover pixel.
    const int rows = m - i >= P ? P : 1;
    for (int j = 0; j < rows; ++j, cur.next()) {
      iy0[j] = cur.oy * p.stride_h - p.pad_top;
      ix0[j] = cur.ox * p.stride_w - p.pad_left;
      nofs[j] = cur.n * x.stride(0);
    }
    float* out = dst + i * kd;
    int64_t k = k0, tap = k0 / g.cin_g, ci = k0 % g.cin_g;
    while (k < k1) {
      const int64_t len = std::min(g.cin_g - ci, k1 - k);
      const int64_t ky = tap / p.kw, kx = tap % p.kw;
      bool all = true;
      for (int j = 0; j < rows; ++j) {
        const int64_t iy = iy0[j] + ky, ix = ix0[j] + kx;
        const bool in = iy >= 0 && iy < g.H && ix >= 0 && ix < g.W;
        src[j] = in ? xg + nofs[j] + iy * x.stride(1) + ix * x.stride(2) + ci * xcs : nullptr;
        all = all && in;
      }
      if (rows == 4 && all && xcs == 1) {
        interleave4(out, src, len);
      } else {
        for (int64_t c = 0; c < len; ++c)
          for (int j = 0; j < rows; ++j) out[c * rows + j] = src[j] ? src[j][c * xcs] : 0.0f;
      }
      out += len * rows;
      k += len;
      ++tap;
      ci = 0;
    }
    i += rows;
  }
}

}  // namespace

void pack_weight_block(const Args& a, int64_t grp, int64_t kk, int64_t ib, float* dst) {
  const Geom& g = a.g;
  const Plan& pl = a.pl;
  const TensorView& w = *a.w;
  const int64_t k0 = kk * pl.kb, kd = std::min(pl.kb, g.K - k0);
  const int64_t c0 = ib * pl.nb, nc = std::min(pl.nb, g.cout_g - c0);
  const int64_t base = k0 * a.wld + (grp * g.cout_g + c0) * w.stride(3);
  if (dtype_is_8bit_weight(w.dtype)) {
    // 8-bit weights: dequantised kQ8Cols channels at a time into a stack block, each packed where
    // the whole block's packing puts those channels (every channel takes kd floats, and a chunk
    // that starts on a multiple of Eigen's weight panel width, 24 on AVX2 and 48 on AVX-512,
    // packs exactly as that part of the whole block does; test_weights8 checks it bit for bit).
    constexpr int64_t kQ8Cols = 48;
    float rows[kQ8Cols * kMaxDepthBlock];
    for (int64_t j = 0; j < nc; j += kQ8Cols) {
      const int64_t cw = std::min(kQ8Cols, nc - j), o0 = grp * g.cout_g + c0 + j;
      for (int64_t r = 0; r < kd; ++r)
        load_weight_row(rows + r * cw, w, base + r * a.wld + j * w.stride(3), w.stride(3), o0, cw, o0 + cw,
                        k0 + r);
      detail::gemm_pack_b(dst + j * kd, rows, cw, kd, cw);
    }
    return;
  }
  const float* src = w.f32() + base;
  detail::gemm_pack_b(dst, src, std::max<int64_t>(a.wld, 1), kd, nc);
}

void gemm_item(const Args& a, int64_t grp, int64_t p0, int64_t m, int64_t ib0, int64_t ib1, const float* wcache,
               float* scratch) {
  const Geom& g = a.g;
  const Plan& pl = a.pl;
  float* pix = scratch;
  float* acc = pix + pl.pix_floats;
  float* wblk = acc + pl.acc_floats;
  const int64_t co0 = ib0 * pl.nb, nc = std::min(ib1 * pl.nb, g.cout_g) - co0;
  std::memset(acc, 0, static_cast<size_t>(m * nc) * sizeof(float));
  for (int64_t kk = 0; kk < pl.nkb; ++kk) {
    const int64_t k0 = kk * pl.kb, kd = std::min(pl.kb, g.K - k0);
    pack_pixels(a, grp, p0, m, k0, k0 + kd, pix);
    for (int64_t ib = ib0; ib < ib1; ++ib) {
      const float* wb;
      if (wcache) {
        wb = wcache + static_cast<size_t>((grp * pl.nkb + kk) * pl.nib + ib) * pl.slot_floats;
      } else {
        pack_weight_block(a, grp, kk, ib, wblk);
        wb = wblk;
      }
      const int64_t c0 = ib * pl.nb, bc = std::min(pl.nb, g.cout_g - c0);
      detail::gemm_packed_acc(acc + (c0 - co0), nc, pix, wb, m, bc, kd);
    }
  }
  epilogue(a, p0, m, grp * g.cout_g + co0, nc, acc);
}

}  // namespace gpen::cpu::detail
