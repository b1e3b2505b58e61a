// Modulated convolution (StyleGAN2) in the decomposed form of kernels/params.h:
//   acc = conv(x_cat * s[n, :], W) ;  y = act(acc * d[n, o] + bias[o]) + residual
// It carries nearly all of GPEN's FLOPs, so it is an implicit GEMM with a register-blocked
// AVX2/FMA micro-kernel rather than im2col + a library GEMM:
//  - the output is cut into tasks of ~kTilePixels output pixels (x one output-channel chunk); a
//    task first writes the input rectangle it reads (its "band", halo included) into the thread's
//    workspace with the prologue applied: x * s, act2(x2 * scale + bias2) * s, zeros outside the
//    image. This is the virtual concat: the concatenated input never exists as a whole;
//  - the GEMM then reads A straight from the band: the row of output pixel p for tap (ky, kx) is
//    the band pixel under that tap, so im2col costs nothing; B is the HWIO weight, whose rows
//    (ky, kx, i) are the GEMM's K axis, packed once per call into 16-column panels (read in
//    place for tiny outputs, see make_plan). K is walked in blocks of <= 256 (kKcMax) so a
//    block's B panel slice stays in L1 while the 6x16 micro-kernel runs over the tile's pixels;
//  - the transposed (up) conv is the same machinery by output phase: output (2a + py, 2b + px)
//    gathers the taps ky = py (mod 2), kx = px (mod 2) from input (a - (ky - py) / 2, ...), so
//    every output is written exactly once (no scatter-add, no zero fill, no races).
// Workspace: the weight packed once per call into 16-column panels (K x Cout floats, shared by
// the threads), and per thread a band and an accumulator tile (a few hundred KB). None of it
// grows with the image.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define GPEN_MODCONV_AVX2 1
#endif

#include "kernels/cpu/ops.h"
#include "kernels/modconv_check.h"

namespace gpen::cpu {

namespace {

constexpr int kMR = 6;                  // output pixels per micro-tile (rows of the register tile)
constexpr int kNR = 16;                 // output channels per micro-tile (two AVX vectors)
constexpr int kKcMax = 256;             // K block: a 16 KB slice of a B panel stays in L1
constexpr int kMaxSeg = 64;             // segments (tap, channel range) per K block
constexpr int kMaxK = 7;                // largest kernel size supported
constexpr int64_t kTilePixels = 192;    // output pixels per task: each B panel slice serves them all
constexpr int64_t kCoChunkMax = 256;    // output channels per task: keeps the accumulator tile in L2
constexpr int64_t kDirectPixels = 128;  // outputs at or below this read B in place (see make_plan)
constexpr size_t kAlign = 64;           // the workspace pointer is aligned up to this inside

float* align_up(void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<float*>((v + kAlign - 1) / kAlign * kAlign);
}

constexpr int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

struct Tap {
  int ky, kx;  // weight tap
  int dy, dx;  // input offset relative to the phase-grid position (a, b)
};

// A set of outputs computed with the same taps: y[sy * a + py, sx * b + px] for a < na, b < nb.
struct Phase {
  int py = 0, px = 0;
  int64_t na = 0, nb = 0;
  int ntap = 0;
  Tap taps[kMaxK * kMaxK];
};

struct Plan {
  int64_t N = 0, H = 0, W = 0, C1 = 0, C2 = 0, C = 0, Co = 0, Ho = 0, Wo = 0;
  int64_t cs = 0;  // floats per pixel in the band (C padded, see make_plan)
  int k = 3, stride = 1;
  int nphase = 0;
  Phase phases[4];
  int mindy = 0, maxdy = 0, mindx = 0, maxdx = 0;
  int64_t ta = 1, tb = 1;  // task extent on the phase grid
  int64_t ga = 0, gb = 0;  // grid extent covering all phases
  int64_t co_chunk = kNR;  // output channels per task (multiple of kNR)
  int64_t band_h = 0, band_w = 0;
  int64_t ntask_a = 0, ntask_b = 0, ntask_co = 0, ntask = 0;
  int64_t kdim = 0, npanel = 0;  // GEMM depth k*k*C and 16-column weight panels
  bool direct_b = false;         // small outputs read B straight from the weight (see make_plan)
  int64_t shared = 0;            // floats of the packed weight, [npanel][kdim][16]
  // Per-thread workspace layout, in floats (after the shared part).
  int64_t off_band = 0, off_ctile = 0, off_bpack = 0, off_svec = 0, off_b2vec = 0, off_dvec = 0, off_bvec = 0,
          off_row = 0;
  int64_t per_thread = 0;
};

// Everything is derived from shapes, so workspace_bytes and the kernel agree on the layout.
Plan make_plan(const ModConvParams& p, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Co, int threads) {
  GPEN_CHECK(p.k >= 1 && p.k <= kMaxK, "modconv: kernel size " + std::to_string(p.k) + " outside [1, 7]");
  GPEN_CHECK(N >= 1 && H >= 1 && W >= 1 && C >= 1 && Co >= 1,
             "modconv: empty tensor (N=" + std::to_string(N) + ", H=" + std::to_string(H) + ", W=" + std::to_string(W) +
                 ", C=" + std::to_string(C) + ", Cout=" + std::to_string(Co) + ")");
  GPEN_CHECK(H <= (int64_t{1} << 20) && W <= (int64_t{1} << 20) && C <= (int64_t{1} << 20) && Co <= (int64_t{1} << 20),
             "modconv: implausible dimensions");
  Plan pl;
  pl.N = N, pl.H = H, pl.W = W, pl.C = C, pl.Co = Co, pl.k = p.k;
  const int k = p.k;
  if (!p.up) {
    pl.stride = 1;
    pl.Ho = H, pl.Wo = W;
    pl.nphase = 1;
    Phase& ph = pl.phases[0];
    ph.na = H, ph.nb = W;
    const int pad = k / 2;
    for (int ky = 0; ky < k; ++ky)
      for (int kx = 0; kx < k; ++kx) ph.taps[ph.ntap++] = Tap{ky, kx, ky - pad, kx - pad};
  } else {
    pl.stride = 2;
    pl.Ho = 2 * (H - 1) + k, pl.Wo = 2 * (W - 1) + k;
    pl.nphase = 4;
    for (int py = 0; py < 2; ++py)
      for (int px = 0; px < 2; ++px) {
        Phase& ph = pl.phases[py * 2 + px];
        ph.py = py, ph.px = px;
        ph.na = (pl.Ho - py + 1) / 2, ph.nb = (pl.Wo - px + 1) / 2;
        for (int ky = py; ky < k; ky += 2)
          for (int kx = px; kx < k; kx += 2) ph.taps[ph.ntap++] = Tap{ky, kx, -(ky - py) / 2, -(kx - px) / 2};
      }
  }
  for (int i = 0; i < pl.nphase; ++i) {
    const Phase& ph = pl.phases[i];
    pl.ga = std::max(pl.ga, ph.na);
    pl.gb = std::max(pl.gb, ph.nb);
    for (int t = 0; t < ph.ntap; ++t) {
      pl.mindy = std::min(pl.mindy, ph.taps[t].dy), pl.maxdy = std::max(pl.maxdy, ph.taps[t].dy);
      pl.mindx = std::min(pl.mindx, ph.taps[t].dx), pl.maxdx = std::max(pl.maxdx, ph.taps[t].dx);
    }
  }
  // Tiles of about kTilePixels, balanced so the last one in a row is not a sliver.
  const int64_t tile_px = kTilePixels, co_cap = kCoChunkMax;
  {
    const int64_t ntb = (pl.gb + tile_px - 1) / tile_px;
    pl.tb = (pl.gb + ntb - 1) / ntb;
  }
  pl.ta = std::max<int64_t>(1, std::min(pl.ga, tile_px / pl.tb));
  if (pl.ta > 1) {
    const int64_t nta = (pl.ga + pl.ta - 1) / pl.ta;
    pl.ta = (pl.ga + nta - 1) / nta;
  }
  pl.ntask_a = (pl.ga + pl.ta - 1) / pl.ta;
  pl.ntask_b = (pl.gb + pl.tb - 1) / pl.tb;
  // Small images give few pixel tiles: split the output channels too so every thread has work.
  const int64_t spatial_tasks = N * pl.ntask_a * pl.ntask_b;
  pl.co_chunk = std::min(round_up(Co, kNR), co_cap);
  const int64_t want = 4 * std::max(1, threads);
  while (spatial_tasks * ((Co + pl.co_chunk - 1) / pl.co_chunk) < want && pl.co_chunk > 4 * kNR)
    pl.co_chunk = round_up(pl.co_chunk / 2, kNR);
  pl.ntask_co = (Co + pl.co_chunk - 1) / pl.co_chunk;
  pl.ntask = spatial_tasks * pl.ntask_co;

  pl.band_h = pl.ta + pl.maxdy - pl.mindy;
  pl.band_w = pl.tb + pl.maxdx - pl.mindx;
  const int64_t mrows = round_up(pl.ta * pl.tb, kMR);
  // Offsets rounded to 16 floats keep every block 64-byte aligned for the vector loads.
  int64_t off = 0;
  auto take = [&](int64_t floats) {
    const int64_t o = off;
    off += round_up(floats, 16);
    return o;
  };
  // The micro-kernel reads 6 band pixels at once; with C a multiple of 1 KB (256, 512, 1024
  // channels) those rows would share L1 sets and evict the B panel, so the pixel stride is
  // padded off such multiples.
  pl.cs = round_up(C, 16);
  if (pl.cs % 64 == 0) pl.cs += 16;
  pl.off_band = take(pl.band_h * pl.band_w * pl.cs);
  // Sized for the widest chunk so the layout does not depend on the thread count.
  pl.off_ctile = take(mrows * std::min(round_up(Co, kNR), co_cap));
  pl.off_bpack = take(int64_t{kKcMax} * kNR);
  pl.off_svec = take(C);
  pl.off_b2vec = take(2 * C);
  pl.off_row = take(C);
  pl.off_dvec = take(round_up(Co, kNR));
  pl.off_bvec = take(round_up(Co, kNR));
  pl.per_thread = off;
  pl.kdim = int64_t{k} * k * C;
  pl.npanel = (Co + kNR - 1) / kNR;
  // Packing the weight costs about two passes over it; it pays when each weight is used by many
  // output pixels. For the small early layers (4x4 .. 8x8) the GEMM is bound by reading the
  // weight once, so they read B in place instead.
  pl.direct_b = N * pl.ga * pl.gb <= kDirectPixels;
  pl.shared = pl.direct_b ? 0 : round_up(pl.npanel * pl.kdim * kNR, 16);
  return pl;
}

// One K block: up to kMaxSeg segments, each a channel range of one tap.
struct KBlock {
  int nseg = 0;
  int len = 0;
  int64_t a_off[kMaxSeg];  // offset of the segment's first channel from a pixel's band position
  int64_t b_off[kMaxSeg];  // offset of the segment's first row in a packed weight panel
  int seg_len[kMaxSeg];
  int ky[kMaxSeg], kx[kMaxSeg];
  int64_t c0[kMaxSeg];
};

// Walks a phase's K axis (taps x channel chunks) in blocks of at most kKcMax.
class KBlocker {
 public:
  KBlocker(const Phase& ph, int k, int64_t C, int64_t cs, int64_t band_w)
      : ph_(ph), k_(k), C_(C), cs_(cs), band_w_(band_w) {
    const int64_t nchunk = (C + kKcMax - 1) / kKcMax;
    chunk_ = (C + nchunk - 1) / nchunk;
  }
  bool next(KBlock& b) {
    b.nseg = 0;
    b.len = 0;
    while (t_ < ph_.ntap && b.nseg < kMaxSeg) {
      const int64_t len = std::min(chunk_, C_ - c_);
      if (b.len + len > kKcMax) break;
      const Tap& tp = ph_.taps[t_];
      b.a_off[b.nseg] = (tp.dy * band_w_ + tp.dx) * cs_ + c_;
      b.b_off[b.nseg] = ((int64_t{tp.ky} * k_ + tp.kx) * C_ + c_) * kNR;
      b.seg_len[b.nseg] = static_cast<int>(len);
      b.ky[b.nseg] = tp.ky, b.kx[b.nseg] = tp.kx, b.c0[b.nseg] = c_;
      ++b.nseg;
      b.len += static_cast<int>(len);
      c_ += len;
      if (c_ == C_) c_ = 0, ++t_;
    }
    return b.nseg > 0;
  }

 private:
  const Phase& ph_;
  int k_;
  int64_t C_, cs_, band_w_, chunk_ = 1;
  int t_ = 0;
  int64_t c_ = 0;
};

// C[6 x 16] (+)= sum over the block's segments of A[6 x len] * B[len x 16]. A row r of segment s
// starts at band + base[r] + a_off[s]; B row i of segment s is the 16 floats at bseg[s] + i * ldb.
// With pf_delta != 0 the kernel also prefetches (into L2) the B rows pf_delta floats further: the
// next panel, which would otherwise arrive from L3 on demand at the start of its first call.
#if GPEN_MODCONV_AVX2
template <bool kPrefetch>
inline void micro_kernel_t(const KBlock& kb, const float* band, const int64_t* base, const float* const* bseg,
                           int64_t ldb, int64_t pf_delta, float* c, int64_t ldc, bool accumulate) {
  __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
  if (accumulate) {
    c00 = _mm256_loadu_ps(c + 0 * ldc), c01 = _mm256_loadu_ps(c + 0 * ldc + 8);
    c10 = _mm256_loadu_ps(c + 1 * ldc), c11 = _mm256_loadu_ps(c + 1 * ldc + 8);
    c20 = _mm256_loadu_ps(c + 2 * ldc), c21 = _mm256_loadu_ps(c + 2 * ldc + 8);
    c30 = _mm256_loadu_ps(c + 3 * ldc), c31 = _mm256_loadu_ps(c + 3 * ldc + 8);
    c40 = _mm256_loadu_ps(c + 4 * ldc), c41 = _mm256_loadu_ps(c + 4 * ldc + 8);
    c50 = _mm256_loadu_ps(c + 5 * ldc), c51 = _mm256_loadu_ps(c + 5 * ldc + 8);
  } else {
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
  }
  for (int s = 0; s < kb.nseg; ++s) {
    const int64_t off = kb.a_off[s];
    const float* a0 = band + base[0] + off;
    const float* a1 = band + base[1] + off;
    const float* a2 = band + base[2] + off;
    const float* a3 = band + base[3] + off;
    const float* a4 = band + base[4] + off;
    const float* a5 = band + base[5] + off;
    const int len = kb.seg_len[s];
    const float* bp = bseg[s];
#pragma GCC unroll 2
    for (int i = 0; i < len; ++i) {
      if constexpr (kPrefetch) _mm_prefetch(reinterpret_cast<const char*>(bp + pf_delta), _MM_HINT_T1);
      const __m256 b0 = _mm256_loadu_ps(bp);
      const __m256 b1 = _mm256_loadu_ps(bp + 8);
      bp += ldb;
      __m256 a = _mm256_broadcast_ss(a0 + i);
      c00 = _mm256_fmadd_ps(a, b0, c00), c01 = _mm256_fmadd_ps(a, b1, c01);
      a = _mm256_broadcast_ss(a1 + i);
      c10 = _mm256_fmadd_ps(a, b0, c10), c11 = _mm256_fmadd_ps(a, b1, c11);
      a = _mm256_broadcast_ss(a2 + i);
      c20 = _mm256_fmadd_ps(a, b0, c20), c21 = _mm256_fmadd_ps(a, b1, c21);
      a = _mm256_broadcast_ss(a3 + i);
      c30 = _mm256_fmadd_ps(a, b0, c30), c31 = _mm256_fmadd_ps(a, b1, c31);
      a = _mm256_broadcast_ss(a4 + i);
      c40 = _mm256_fmadd_ps(a, b0, c40), c41 = _mm256_fmadd_ps(a, b1, c41);
      a = _mm256_broadcast_ss(a5 + i);
      c50 = _mm256_fmadd_ps(a, b0, c50), c51 = _mm256_fmadd_ps(a, b1, c51);
    }
  }
  _mm256_storeu_ps(c + 0 * ldc, c00), _mm256_storeu_ps(c + 0 * ldc + 8, c01);
  _mm256_storeu_ps(c + 1 * ldc, c10), _mm256_storeu_ps(c + 1 * ldc + 8, c11);
  _mm256_storeu_ps(c + 2 * ldc, c20), _mm256_storeu_ps(c + 2 * ldc + 8, c21);
  _mm256_storeu_ps(c + 3 * ldc, c30), _mm256_storeu_ps(c + 3 * ldc + 8, c31);
  _mm256_storeu_ps(c + 4 * ldc, c40), _mm256_storeu_ps(c + 4 * ldc + 8, c41);
  _mm256_storeu_ps(c + 5 * ldc, c50), _mm256_storeu_ps(c + 5 * ldc + 8, c51);
}

__attribute__((noinline)) void micro_kernel(const KBlock& kb, const float* band, const int64_t* base,
                                            const float* const* bseg, int64_t ldb, int64_t pf_delta, float* c,
                                            int64_t ldc, bool accumulate) {
  if (pf_delta)
    micro_kernel_t<true>(kb, band, base, bseg, ldb, pf_delta, c, ldc, accumulate);
  else
    micro_kernel_t<false>(kb, band, base, bseg, ldb, 0, c, ldc, accumulate);
}
#else
void micro_kernel(const KBlock& kb, const float* band, const int64_t* base, const float* const* bseg, int64_t ldb,
                  int64_t /*pf_delta*/, float* c, int64_t ldc, bool accumulate) {
  float acc[kMR][kNR];
  for (int r = 0; r < kMR; ++r)
    for (int j = 0; j < kNR; ++j) acc[r][j] = accumulate ? c[r * ldc + j] : 0.0f;
  for (int s = 0; s < kb.nseg; ++s) {
    const int len = kb.seg_len[s];
    const float* bp = bseg[s];
    for (int i = 0; i < len; ++i, bp += ldb)
      for (int r = 0; r < kMR; ++r) {
        const float a = band[base[r] + kb.a_off[s] + i];
        for (int j = 0; j < kNR; ++j) acc[r][j] += a * bp[j];
      }
  }
  for (int r = 0; r < kMR; ++r)
    for (int j = 0; j < kNR; ++j) c[r * ldc + j] = acc[r][j];
}
#endif

struct Inputs {
  const TensorView& x;
  const TensorView* x2;
  const TensorView& w;
  const TensorView& s;
  const TensorView* d;
  const TensorView* bias;
  const TensorView* residual;
  float x2_scale = 0.0f;
  const float* x2_bias = nullptr;
  int64_t x2_bias_stride = 0;
};

void validate(const ModConvParams& p, const ModConvArgs& a, const TensorView& y) {
  check_modconv_inputs(p, a);
  auto f32 = [](const TensorView* v, const char* what) {
    if (v) GPEN_CHECK(v->dtype == DType::f32, std::string("modconv: ") + what + " must be f32 on the CPU");
  };
  f32(a.x, "x"), f32(a.x2, "x2"), f32(a.x2_scale, "x2_scale"), f32(a.x2_bias, "x2_bias"), f32(a.w, "w");
  f32(a.s, "s"), f32(a.d, "d"), f32(a.bias, "bias"), f32(a.residual, "residual"), f32(&y, "y");
  check_modconv_shapes(p, a, y);
}

// Row helpers of the prologue and epilogue. The activation is applied as v * (v < 0 ? slope : 1)
// * gain, branch-free: its sign is data (noise), so a branch would mispredict half the time.
#if GPEN_MODCONV_AVX2
inline __m256 leaky_factor(__m256 v, __m256 pos, __m256 neg) {
  return _mm256_blendv_ps(pos, neg, _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ));
}
#endif

// dst[c] = src[c] * s[c]
void scale_row(float* dst, const float* src, const float* s, int64_t n) {
  int64_t c = 0;
#if GPEN_MODCONV_AVX2
  for (; c + 8 <= n; c += 8) _mm256_storeu_ps(dst + c, _mm256_mul_ps(_mm256_loadu_ps(src + c), _mm256_loadu_ps(s + c)));
#endif
  for (; c < n; ++c) dst[c] = src[c] * s[c];
}

// dst[c] = act2(src[c] * scale + b[c]) * s[c], with gs[c] = s[c] * gain.
void noise_row(float* dst, const float* src, float scale, const float* b, const float* gs, float slope, int64_t n) {
  int64_t c = 0;
#if GPEN_MODCONV_AVX2
  const __m256 vs = _mm256_set1_ps(scale), one = _mm256_set1_ps(1.0f), vsl = _mm256_set1_ps(slope);
  for (; c + 8 <= n; c += 8) {
    const __m256 t = _mm256_fmadd_ps(_mm256_loadu_ps(src + c), vs, _mm256_loadu_ps(b + c));
    _mm256_storeu_ps(dst + c, _mm256_mul_ps(_mm256_mul_ps(t, leaky_factor(t, one, vsl)), _mm256_loadu_ps(gs + c)));
  }
#endif
  for (; c < n; ++c) {
    const float t = src[c] * scale + b[c];
    dst[c] = t * (t < 0.0f ? slope : 1.0f) * gs[c];
  }
}

// y[o] = act(acc[o] * d[o] + b[o]) (+ r[o]); act(v) = v * (v < 0 ? gneg : gpos).
void epilogue_row(float* y, const float* acc, const float* d, const float* b, const float* r, float gpos, float gneg,
                  int64_t n) {
  int64_t o = 0;
#if GPEN_MODCONV_AVX2
  const __m256 vp = _mm256_set1_ps(gpos), vn = _mm256_set1_ps(gneg);
  for (; o + 8 <= n; o += 8) {
    const __m256 v = _mm256_fmadd_ps(_mm256_loadu_ps(acc + o), _mm256_loadu_ps(d + o), _mm256_loadu_ps(b + o));
    __m256 out = _mm256_mul_ps(v, leaky_factor(v, vp, vn));
    if (r) out = _mm256_add_ps(out, _mm256_loadu_ps(r + o));
    _mm256_storeu_ps(y + o, out);
  }
#endif
  for (; o < n; ++o) {
    const float v = acc[o] * d[o] + b[o];
    y[o] = v * (v < 0.0f ? gneg : gpos) + (r ? r[o] : 0.0f);
  }
}

// The band of a task: input rows [ry0, ry0 + band_h) x cols [rx0, rx0 + band_w) of sample n with
// the prologue applied, zero outside the image. `row` is scratch for one strided pixel.
void fill_band(const Plan& pl, const ModConvParams& p, const Inputs& in, int64_t n, int64_t ry0, int64_t rx0,
               float* band, const float* sv, const float* b2v, const float* gs2, float* row) {
  const TensorView& x = in.x;
  const int64_t nx = x.dim(0) == 1 ? 0 : n;
  const float* xb = x.f32() + nx * x.stride(0);
  const int64_t xs3 = x.stride(3);
  const int64_t C = pl.C, C1 = pl.C1, C2 = pl.C2;
  const float sc2 = in.x2_scale, slope2 = p.x2_act.slope;
  for (int64_t r = 0; r < pl.band_h; ++r) {
    const int64_t iy = ry0 + r;
    for (int64_t col = 0; col < pl.band_w; ++col) {
      const int64_t ix = rx0 + col;
      float* dst = band + (r * pl.band_w + col) * pl.cs;
      if (iy < 0 || iy >= pl.H || ix < 0 || ix >= pl.W) {
        std::memset(dst, 0, sizeof(float) * C);
        continue;
      }
      const float* src = xb + iy * x.stride(1) + ix * x.stride(2);
      if (xs3 != 1) {
        for (int64_t c = 0; c < C1; ++c) row[c] = src[c * xs3];
        src = row;
      }
      scale_row(dst, src, sv, C1);
      if (C2 > 0) {
        const TensorView& x2 = *in.x2;
        const float* src2 = x2.f32() + n * x2.stride(0) + iy * x2.stride(1) + ix * x2.stride(2);
        const int64_t s3 = x2.stride(3);
        if (s3 != 1) {
          for (int64_t c = 0; c < C2; ++c) row[c] = src2[c * s3];
          src2 = row;
        }
        noise_row(dst + C1, src2, sc2, b2v, gs2, slope2, C2);
      }
    }
  }
}

// Packs output channels [16 j, 16 j + 16) of the weight rows of taps [t0, t1) into panel j
// ([kdim][16], zero past Cout): contiguous B for the micro-kernel whatever the weight's strides.
void pack_weight(const Plan& pl, const TensorView& w, int64_t j, int t0, int t1, float* packed) {
  const float* wp = w.f32();
  const int64_t s0 = w.stride(0), s1 = w.stride(1), s2 = w.stride(2), s3 = w.stride(3);
  const int64_t o0 = j * kNR;
  const bool full = o0 + kNR <= pl.Co && s3 == 1;
  float* panel = packed + j * pl.kdim * kNR;
  for (int t = t0; t < t1; ++t) {
    const int ky = t / pl.k, kx = t % pl.k;
    const float* src = wp + ky * s0 + kx * s1 + o0 * s3;
    float* dst = panel + int64_t{t} * pl.C * kNR;
    for (int64_t c = 0; c < pl.C; ++c, src += s2, dst += kNR) {
      if (full) {
        std::memcpy(dst, src, sizeof(float) * kNR);
      } else {
        for (int q = 0; q < kNR; ++q) dst[q] = o0 + q < pl.Co ? src[q * s3] : 0.0f;
      }
    }
  }
}

// Points bseg at the B rows of a K block for output channels [o0, o0 + 16) and returns their
// stride: the packed panel, the weight itself (direct mode, whole panel, unit channel stride) or
// a zero-padded copy in `bpack`.
int64_t b_rows(const Plan& pl, const KBlock& kb, const TensorView& w, int64_t o0, const float* packed, float* bpack,
               const float** bseg) {
  if (!pl.direct_b) {
    const float* panel = packed + (o0 / kNR) * pl.kdim * kNR;
    for (int s = 0; s < kb.nseg; ++s) bseg[s] = panel + kb.b_off[s];
    return kNR;
  }
  const int64_t s0 = w.stride(0), s1 = w.stride(1), s2 = w.stride(2), s3 = w.stride(3);
  const bool whole = o0 + kNR <= pl.Co && s3 == 1;
  for (int s = 0; s < kb.nseg; ++s) {
    const float* src = w.f32() + kb.ky[s] * s0 + kb.kx[s] * s1 + kb.c0[s] * s2 + o0 * s3;
    if (whole) {
      bseg[s] = src;
      continue;
    }
    bseg[s] = bpack;
    for (int i = 0; i < kb.seg_len[s]; ++i, src += s2, bpack += kNR)
      for (int q = 0; q < kNR; ++q) bpack[q] = o0 + q < pl.Co ? src[q * s3] : 0.0f;
  }
  return whole ? s2 : kNR;
}

}  // namespace

size_t modconv_workspace_bytes(const ModConvParams& p, const Shape& x_cat, const Shape& y, int threads) {
  GPEN_CHECK(x_cat.rank == 4 && y.rank == 4,
             "modconv: workspace query needs NHWC shapes, got " + x_cat.str() + " and " + y.str());
  const int nt = threads > 0 ? threads : std::max(1, num_threads());  // must match the run's thread count
  const Plan pl = make_plan(p, y[0], x_cat[1], x_cat[2], x_cat[3], y[3], nt);
  return static_cast<size_t>(pl.shared + pl.per_thread * nt) * sizeof(float) + kAlign;
}

void modconv(const ModConvParams& p, const ModConvArgs& a, const TensorView& y, void* workspace) {
  validate(p, a, y);
  // The workspace holds one slice per thread: it must have been sized with the same thread count.
  const int nt_req = std::max(1, num_threads());
  Plan pl = make_plan(p, y.dim(0), a.x->dim(1), a.x->dim(2), a.w->dim(2), a.w->dim(3), nt_req);
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

#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < pl.ntask; ++task) {
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
        int64_t base[round_up(kTilePixels, kMR)];
        for (int64_t m = 0; m < mtiles * kMR; ++m) {
          const int64_t q = std::min(m, M - 1);
          base[m] = ((a0 + q / wb - ry0) * pl.band_w + (b0 + q % wb - rx0)) * pl.cs;
        }
        KBlocker blocker(ph, pl.k, pl.C, pl.cs, pl.band_w);
        KBlock kb;
        bool first = true;
        while (blocker.next(kb)) {
          for (int64_t j = 0; j < nco; j += kNR) {
            const int64_t ldb = b_rows(pl, kb, in.w, o0 + j, packed, bpack, bseg);
            // The first micro-tile also prefetches the next panel's rows of this block.
            const int64_t pf = j + kNR < nco ? (pl.direct_b ? kNR : pl.kdim * kNR) : 0;
            for (int64_t mt = 0; mt < mtiles; ++mt)
              micro_kernel(kb, band, base + mt * kMR, bseg, ldb, mt == 0 ? pf : 0, ctile + mt * kMR * ldc + j, ldc,
                           !first);
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
