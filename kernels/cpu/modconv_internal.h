#pragma once
// Internal to the CPU modulated convolution (kernels/cpu/modconv*.cpp, overview in modconv.cpp):
// the task plan (modconv_plan.cpp), the K blocking, the micro-kernel and its B operand
// (modconv_gemm.cpp), and the prologue / epilogue rows (modconv_rows.cpp).
#include <algorithm>
#include <cstddef>
#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define GPEN_MODCONV_AVX2 1
#endif

#include "kernels/cpu/ops.h"

namespace gpen::cpu::modconv_detail {

constexpr int kMR = 6;                  // output pixels per micro-tile (rows of the register tile)
constexpr int kNR = 16;                 // output channels per micro-tile (two AVX vectors)
constexpr int kKcMax = 256;             // K block: a 16 KB slice of a B panel stays in L1
constexpr int kMaxSeg = 64;             // segments (tap, channel range) per K block
constexpr int kMaxK = 7;                // largest kernel size supported
constexpr int64_t kTilePixels = 192;    // output pixels per task: each B panel slice serves them all
// Weight tiles (ConvChoice::weight_tiles) dequantise each task's B blocks: twice the pixels per
// task halves that work per output for a larger band and accumulator tile.
constexpr int64_t kTilePixelsWeightTiles = 384;
constexpr int64_t kCoChunkMax = 256;    // output channels per task: keeps the accumulator tile in L2
constexpr int64_t kDirectPixels = 128;  // outputs at or below this read B in place (see make_plan)

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
  bool weight_tiles = false;     // ConvChoice::weight_tiles: B read (dequantised) per K block, as direct_b
  int64_t shared = 0;            // floats of the packed weight, [npanel][kdim][16]
  // Per-thread workspace layout, in floats (after the shared part).
  int64_t off_band = 0, off_ctile = 0, off_bpack = 0, off_svec = 0, off_b2vec = 0, off_dvec = 0, off_bvec = 0,
          off_row = 0;
  int64_t per_thread = 0;
};

// Everything is derived from shapes, so workspace_bytes and the kernel agree on the layout.
// weight_tiles: no packed weight in the workspace (ConvChoice::weight_tiles).
Plan make_plan(const ModConvParams& p, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Co, int threads,
               bool weight_tiles = false);

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

// C[6 x 2L] (+)= sum over the block's segments of A[6 x len] * B[len x 2L], L the lanes of the
// copy's vector (kernels/cpu/modconv_kernel.cpp). A row r of segment s starts at
// band + base[r] + a_off[s]; B row i of segment s is L floats at bseg[s] + i * ldb and L more
// at b2 floats further (the panel's second half, or the next panel). With pf_delta != 0 the
// kernel also prefetches (into L2) the B rows pf_delta floats further: the next panel, which
// would otherwise arrive from L3 on demand at the start of its first call.
namespace isa_base {  // AVX2 (L = 8): one 16-column panel, b2 = 8
void micro_kernel(const KBlock& kb, const float* band, const int64_t* base, const float* const* bseg, int64_t ldb,
                  int64_t b2, int64_t pf_delta, float* c, int64_t ldc, bool accumulate);
}
namespace isa_avx512 {  // AVX-512 (L = 16): two neighbouring panels, b2 = the distance between them
void micro_kernel(const KBlock& kb, const float* band, const int64_t* base, const float* const* bseg, int64_t ldb,
                  int64_t b2, int64_t pf_delta, float* c, int64_t ldc, bool accumulate);
// The same for 12 rows lda floats apart (row r at a + r lda), one segment of len, B rows 16
// floats apart: C[12 x 32] (+)= A[12 x len] * B[len x 32], the same bits as two 6-row calls.
void micro_kernel12(const float* a, int64_t lda, int64_t len, const float* b, int64_t b2, float* c, int64_t ldc,
                    bool accumulate);
// The same for the last rows <= 4 (1-4) of a GEMM whose rows stop short of a 6-row tile: the fused
// Winograd forms' 16 and 64 tiles would otherwise compute 2 rows of padding.
void micro_kernel_tail(int rows, const float* a, int64_t lda, int64_t len, const float* b, int64_t b2, float* c,
                       int64_t ldc, bool accumulate);
}

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

// The band of a task: input rows [ry0, ry0 + band_h) x cols [rx0, rx0 + band_w) of sample n with
// the prologue applied, zero outside the image. `row` is scratch for one strided pixel.
void fill_band(const Plan& pl, const ModConvParams& p, const Inputs& in, int64_t n, int64_t ry0, int64_t rx0,
               float* band, const float* sv, const float* b2v, const float* gs2, float* row);
// y[o] = act(acc[o] * d[o] + b[o]) (+ r[o]); act(v) = v * (v < 0 ? gneg : gpos).
void epilogue_row(float* y, const float* acc, const float* d, const float* b, const float* r, float gpos, float gneg,
                  int64_t n);
// Packs output channels [16 j, 16 j + 16) of the weight rows of taps [t0, t1) into panel j
// ([kdim][16], zero past Cout): contiguous B for the micro-kernel whatever the weight's strides.
void pack_weight(const Plan& pl, const TensorView& w, int64_t j, int t0, int t1, float* packed);
// Points bseg at the B rows of a K block for output channels [o0, o0 + 16) and returns their
// stride: the packed panel, the weight itself (direct mode, whole panel, unit channel stride) or
// a zero-padded copy in `bpack`.
int64_t b_rows(const Plan& pl, const KBlock& kb, const TensorView& w, int64_t o0, const float* packed, float* bpack,
               const float** bseg);

// The implicit-GEMM path alone (modconv's modconv_direct; benchmarks compare it with the others in
// one process). Inputs already validated.
size_t modconv_direct_workspace_bytes(const ModConvParams& p, const Shape& x_cat, const Shape& y, int threads,
                                      bool weight_tiles = false);
void modconv_direct(const ModConvParams& p, const ModConvArgs& a, const TensorView& y, void* workspace,
                    bool weight_tiles = false);

}  // namespace gpen::cpu::modconv_detail
