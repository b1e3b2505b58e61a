#pragma once
// Shared by the modulated-conv kernels (modconv_mma.cu, modconv_wmma.cu, modconv_simt.cu) and their dispatcher
// (modconv.cu): the geometry of one call, the operand stagers with the fused prologue, the fused
// epilogue, a block's tile, the double-buffered depth loop and the launch.
//
// The op (kernels/params.h, ModConvParams) is an implicit GEMM per sample n and output phase:
//   rows    m = (a, b)        a position on the phase's output grid: y[ostep*a + py, ostep*b + px]
//   columns co                output channel
//   depth   k = t * C + ci    t: the phase's tap (ty, tx) = (t / ntx, t % ntx), ci: input channel
//   A[m][k] = prologue(x_cat[n, a + dy0 + ay + dstep*ty, b + dx0 + dstep*tx, ci])  (0 outside the image)
//   B[k][co] = w[ky0 + kstep*ty][kx0 + kstep*tx][ci][co]
// with prologue(v) = x * s[n, ci] for ci < C1 and act2(x2 * x2_scale + x2_bias) * s[n, ci] after:
// the style scaling and GPEN's noise-injection concat happen while A is staged, so neither the
// modulated input nor the concatenation is ever stored.
//  - plain conv: one phase, ostep 1, taps k x k from (0, 0) in steps of 1, dy0 = dx0 = -(k / 2);
//  - up (transposed, stride 2, padding 0): four phases (py, px), ostep 2. Output 2a + py gathers
//    the weight taps ky = py + 2 ty from input row a - ty (the same gather as the CPU op), so every
//    output is written exactly once: no scatter, no atomics, no zero fill. A phase may have no
//    taps (k = 1): its outputs are 0. A row crop (ModConvParams::crop_top) shifts a phase's
//    input rows by ay and its first weight row to the parity of the whole op's row.
// Epilogue: y = act(acc * d[n, co] + bias[co]) + residual (up: plain acc), through y's strides.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/modconv_b8.cuh"
#include "kernels/cuda/weights8.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

struct ModConvPhase {
  int py = 0, px = 0;    // output offset of the phase
  int na = 0, nb = 0;    // phase grid: rows a < na, columns b < nb
  int ntx = 1;           // taps per weight row of the phase
  int ky0 = 0, kx0 = 0;  // weight tap of t = 0
  int ay = 0;            // input row of grid row 0 past g.dy0 (the up conv's row crop)
  int depth = 0;         // GEMM depth: taps * C
};

struct ModConvGeometry {
  int n = 0, h = 0, w = 0, c1 = 0, c2 = 0, c = 0, cout = 0, k = 1;
  int ostep = 1, kstep = 1, dstep = 1, dy0 = 0, dx0 = 0;
  int nphase = 1;
  ModConvPhase ph[4];
  int ho = 0, wo = 0;  // the output's size
  // Split-K (splitk.cuh): split s of a tile sums depth [s * kchunk, min(depth, (s + 1) * kchunk))
  // of its phase; kchunk covers every phase's depth when splits == 1.
  int splits = 1, kchunk = 0;
  NhwcStrides xs, x2s, ys, rs;  // xs.n is 0 when x (batch 1) is broadcast
  int64_t s_n = 0, s_c = 0, d_n = 0, d_c = 0, bias_c = 0, x2b_c = 0;
  Activation act, x2_act;
};

template <class T>
struct ModConvTensors {
  const T* x = nullptr;
  const T* x2 = nullptr;        // optional, with x2_scale [1] and x2_bias [C2]
  const T* x2_scale = nullptr;
  const T* x2_bias = nullptr;
  const T* w = nullptr;
  const T* s = nullptr;
  const T* d = nullptr;         // optional
  const T* bias = nullptr;      // optional
  const T* residual = nullptr;  // optional
  T* y = nullptr;
  float* partial = nullptr;     // split-K: [splits][n][ho][wo][cout] raw sums (the workspace)
  Weight8 w8{};                 // 8-bit weight (w is null then): see weights8.cuh
};

// 16 bytes of T: one vector load or store. Used only where the host checked 16-byte alignment.
template <class T>
struct __align__(16) Vec16 {
  static constexpr int n = 16 / static_cast<int>(sizeof(T));
  T v[n];
};

// Input position of the first tap for a row, for rows past the end: every tap lands outside.
constexpr int kFarAway = -(1 << 29);

// Stages the A operand (BM rows x BK depth) for one depth step. Thread `tid` owns one chunk of
// kV = 16 / sizeof(T) consecutive depth columns in each of kRows rows (rows tid / kCpr + i * kRowStep),
// the same columns in every row, so the per-column work (tap, channel, style values) is done once.
// kVec (C1, C2 multiples of kV, unit channel strides, 16-byte aligned pixels, s and x2_bias
// rows too): a chunk lies inside one tap and one source, load() issues one 16-byte load per row
// and the prologue runs in finish(), after the MMAs of the previous step have been issued. Else
// each element is decoded and finished in load() (odd channel counts; slow but general).
template <class T, int BM, int BK, int kThreads, bool kVec>
struct ModConvAStage {
  static constexpr int kV = Vec16<T>::n;
  static constexpr int kCpr = BK / kV;  // chunks per row
  static constexpr int kRowStep = kThreads / kCpr;
  static constexpr int kRows = BM / kRowStep;
  static_assert(BK % kV == 0 && kThreads % kCpr == 0 && BM % kRowStep == 0, "A staging does not tile");

  const T* x = nullptr;   // sample n of x (or the broadcast batch)
  const T* x2 = nullptr;  // sample n of x2
  const T* s = nullptr;   // s[n, :]
  float x2_scale = 0.0f;
  int col = 0, row = 0;  // this thread's first depth column and first row in the tile
  int ia[kRows], ib[kRows];
  // Staged by load(): raw x/x2 values (kVec) or finished values (!kVec), and for kVec the
  // column facts.
  Vec16<T> raw[kRows];
  Vec16<T> sv, bv;
  unsigned inside = 0;  // bit i: row i read real pixels (else its chunk is zero)
  bool second = false;  // the chunk reads x2
  bool live = false;    // the chunk is inside the depth

  __device__ __forceinline__ void init(const ModConvGeometry& g, const ModConvTensors<T>& t, const ModConvPhase& ph,
                                       int n, int m0, int tid) {
    x = t.x + n * g.xs.n;
    x2 = t.x2 ? t.x2 + n * g.x2s.n : nullptr;
    s = t.s + n * g.s_n;
    x2_scale = t.x2 ? to_f32(t.x2_scale[0]) : 0.0f;
    col = (tid % kCpr) * kV;
    row = tid / kCpr;
    for (int i = 0; i < kRows; ++i) {
      const int m = m0 + row + i * kRowStep;
      if (m < ph.na * ph.nb) {
        const int a = m / ph.nb;
        ia[i] = a + g.dy0 + ph.ay;
        ib[i] = m - a * ph.nb + g.dx0;
      } else {
        ia[i] = ib[i] = kFarAway;
      }
    }
  }

  // The prologue for one element of input channel ci (raw value v).
  __device__ __forceinline__ float prologue(const ModConvGeometry& g, const ModConvTensors<T>& t, int ci,
                                            float v) const {
    if (ci < g.c1) return v * to_f32(s[ci * g.s_c]);
    const float u = v * x2_scale + to_f32(t.x2_bias[(ci - g.c1) * g.x2b_c]);
    return activate(g.x2_act, u) * to_f32(s[ci * g.s_c]);
  }

  __device__ __forceinline__ void load(const ModConvGeometry& g, const ModConvTensors<T>& t, const ModConvPhase& ph,
                                       int k0) {
    const T zero = from_f32<T>(0.0f);
    const int kc = k0 + col;
    if constexpr (kVec) {
      live = kc < ph.depth;
      inside = 0;
      if (!live) return;
      const int tap = kc / g.c, ci = kc - tap * g.c;
      const int ty = tap / ph.ntx, tx = tap - ty * ph.ntx;
      const int dy = g.dstep * ty, dx = g.dstep * tx;
      second = ci >= g.c1;
      const T* src;
      NhwcStrides st;
      if (second) {
        src = x2 + (ci - g.c1);
        st = g.x2s;
        sv = *reinterpret_cast<const Vec16<T>*>(s + ci);
        bv = *reinterpret_cast<const Vec16<T>*>(t.x2_bias + (ci - g.c1));
      } else {
        src = x + ci;
        st = g.xs;
        sv = *reinterpret_cast<const Vec16<T>*>(s + ci);
      }
      for (int i = 0; i < kRows; ++i) {
        const int iy = ia[i] + dy, ix = ib[i] + dx;
        if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) {
          raw[i] = *reinterpret_cast<const Vec16<T>*>(src + iy * st.h + ix * st.w);
          inside |= 1u << i;
        }
      }
    } else {
      for (int j = 0; j < kV; ++j) {
        const int k = kc + j;
        const bool in_depth = k < ph.depth;
        int tap = 0, ci = 0, dy = 0, dx = 0;
        if (in_depth) {
          tap = k / g.c, ci = k - tap * g.c;
          const int ty = tap / ph.ntx, tx = tap - ty * ph.ntx;
          dy = g.dstep * ty, dx = g.dstep * tx;
        }
        for (int i = 0; i < kRows; ++i) {
          T v = zero;
          const int iy = ia[i] + dy, ix = ib[i] + dx;
          if (in_depth && iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) {
            const float r = ci < g.c1 ? to_f32(x[iy * g.xs.h + ix * g.xs.w + ci * g.xs.c])
                                      : to_f32(x2[iy * g.x2s.h + ix * g.x2s.w + (ci - g.c1) * g.x2s.c]);
            v = from_f32<T>(prologue(g, t, ci, r));
          }
          raw[i].v[j] = v;
        }
      }
    }
  }

  // The finished values of row i's chunk (depth columns col .. col + kV of the step).
  __device__ __forceinline__ void finish(const ModConvGeometry& g, int i, float (&out)[kV]) const {
    if constexpr (kVec) {
      if (!(inside >> i & 1u)) {
        for (int j = 0; j < kV; ++j) out[j] = 0.0f;
        return;
      }
      if (second) {
        for (int j = 0; j < kV; ++j) {
          const float u = to_f32(raw[i].v[j]) * x2_scale + to_f32(bv.v[j]);
          out[j] = activate(g.x2_act, u) * to_f32(sv.v[j]);
        }
      } else {
        for (int j = 0; j < kV; ++j) out[j] = to_f32(raw[i].v[j]) * to_f32(sv.v[j]);
      }
    } else {
      (void)g;
      for (int j = 0; j < kV; ++j) out[j] = to_f32(raw[i].v[j]);
    }
  }
};

// Stages the B operand (BK depth rows x BN output channels) for one depth step: thread `tid`
// owns one chunk of kV consecutive channels in each of kRows rows. kVec: Cout a multiple of kV
// and the weight 16-byte aligned, one 16-byte load per chunk.
template <class T, int BK, int BN, int kThreads, bool kVec>
struct ModConvBStage {
  static constexpr int kV = Vec16<T>::n;
  static constexpr int kCpr = BN / kV;
  static constexpr int kRowStep = kThreads / kCpr;
  static constexpr int kRows = BK / kRowStep;
  static_assert(BN % kV == 0 && kThreads % kCpr == 0 && BK % kRowStep == 0, "B staging does not tile");

  int col = 0, row = 0;
  Vec16<T> raw[kRows];

  __device__ __forceinline__ void init(int tid) {
    col = (tid % kCpr) * kV;
    row = tid / kCpr;
  }

  __device__ __forceinline__ void load(const ModConvGeometry& g, const ModConvTensors<T>& t, const ModConvPhase& ph,
                                       int k0, int n0) {
    if (t.w8.codes) {
      modconv_load_b8<T, kRows, kRowStep, kVec>(g, t, ph, k0, n0, row, col, raw);
      return;
    }
    const T zero = from_f32<T>(0.0f);
    const int co = n0 + col;
    for (int i = 0; i < kRows; ++i) {
      const int k = k0 + row + i * kRowStep;
      if (k >= ph.depth || co >= g.cout) {
        for (int j = 0; j < kV; ++j) raw[i].v[j] = zero;
        continue;
      }
      int krow = 0;
      const T* wr = t.w + modconv_b_index(g, ph, k, co, krow);
      if constexpr (kVec) {
        raw[i] = *reinterpret_cast<const Vec16<T>*>(wr);
      } else {
        for (int j = 0; j < kV; ++j) raw[i].v[j] = co + j < g.cout ? wr[j] : zero;
      }
    }
  }

};

// Output pixel (oy, ox) of row m of a phase.
__device__ __forceinline__ void modconv_pixel(const ModConvGeometry& g, const ModConvPhase& ph, int m, int& oy,
                                              int& ox) {
  const int a = m / ph.nb, b = m - a * ph.nb;
  oy = g.ostep * a + ph.py;
  ox = g.ostep * b + ph.px;
}

// y[n, oy, ox, co] = act(acc * d[n, co] + bias[co]) + residual[n, oy, ox, co] (the optional
// parts where present; the up conv has none).
template <class T>
__device__ __forceinline__ void modconv_store(const ModConvGeometry& g, const ModConvTensors<T>& t, int n, int oy,
                                              int ox, int co, float acc) {
  float v = acc;
  if (t.d) v *= to_f32(t.d[n * g.d_n + co * g.d_c]);
  if (t.bias) v += to_f32(t.bias[co * g.bias_c]);
  v = activate(g.act, v);
  if (t.residual) v += to_f32(t.residual[n * g.rs.n + int64_t{oy} * g.rs.h + int64_t{ox} * g.rs.w + co * g.rs.c]);
  t.y[n * g.ys.n + int64_t{oy} * g.ys.h + int64_t{ox} * g.ys.w + co * g.ys.c] = from_f32<T>(v);
}

// The end of a block's GEMM for one output: the epilogue, or under split-K the raw sum into the
// split's slice of the partial sums (the reduction pass runs the epilogue).
template <class T>
__device__ __forceinline__ void modconv_finish(const ModConvGeometry& g, const ModConvTensors<T>& t, int split, int n,
                                               int oy, int ox, int co, float acc) {
  if (g.splits > 1)
    t.partial[(((int64_t{split} * g.n + n) * g.ho + oy) * g.wo + ox) * g.cout + co] = acc;
  else
    modconv_store(g, t, n, oy, ox, co, acc);
}

// What one block of a modconv kernel computes: BM output pixels (rows m0..) of phase ph of sample
// n, by BN channels (n0..); blockIdx as launch_modconv_tiles lays out the grid.
struct ModConvTile {
  int n = 0, m0 = 0, n0 = 0;
  int split = 0, k_begin = 0, k_end = 0;  // the depth range this block sums (may be empty)
  ModConvPhase ph;
  // Blocks past the end of a smaller phase (the grid covers the largest) have nothing to do; this
  // is block-uniform, so such a block may return before any barrier.
  __device__ __forceinline__ bool empty() const { return m0 >= ph.na * ph.nb; }
};

__device__ __forceinline__ ModConvTile modconv_tile(const ModConvGeometry& g, int bm, int bn) {
  ModConvTile b;
  const int np = blockIdx.z / g.splits;
  b.split = blockIdx.z - np * g.splits;
  b.n = np / g.nphase;
  b.ph = g.ph[np - b.n * g.nphase];
  b.m0 = blockIdx.x * bm;
  b.n0 = blockIdx.y * bn;
  b.k_begin = b.split * g.kchunk;
  b.k_end = min(b.ph.depth, b.k_begin + g.kchunk);
  return b;
}

// The depth loop of both kernels, with its operand stagers: two shared-memory stages filled
// through registers. Step 0 is loaded and stored before the loop; in each step the global loads
// of step + 1 are issued first, then compute(buf) consumes stage buf, then what was loaded is
// stored into the other stage (last read in the previous step, before the barrier that ended
// it): one barrier per step, and the load latency hides behind the arithmetic. The kernel's tile
// layout is in its two store functions: store_a(buf, row, col, v) puts the finished A values
// v[kV] of tile row `row`, depth columns col.., into stage buf; store_b(buf, row, col, raw) the B
// values of depth row `row`, channels col... (The stagers are locals of this function: held in a
// block object instead, they grew the element-path WMMA kernels' stack frame from 192 to 288
// bytes under nvcc 13.)
template <int BM, int BN, int BK, int Threads, bool kVec, class T, class StoreA, class StoreB, class Compute>
__device__ __forceinline__ void modconv_depth_loop(const ModConvGeometry& g, const ModConvTensors<T>& t,
                                                   const ModConvTile& tile, StoreA&& store_a, StoreB&& store_b,
                                                   Compute&& compute) {
  using AStage = ModConvAStage<T, BM, BK, Threads, kVec>;
  using BStage = ModConvBStage<T, BK, BN, Threads, kVec>;
  AStage as;
  BStage bs;
  as.init(g, t, tile.ph, tile.n, tile.m0, threadIdx.x);
  bs.init(threadIdx.x);
  auto store_stage = [&](int buf) {
    for (int i = 0; i < AStage::kRows; ++i) {
      float v[AStage::kV];
      as.finish(g, i, v);
      store_a(buf, as.row + i * AStage::kRowStep, as.col, v);
    }
    for (int i = 0; i < BStage::kRows; ++i) store_b(buf, bs.row + i * BStage::kRowStep, bs.col, bs.raw[i]);
  };
  // A chunk ends on a multiple of BK (kchunk is) or at the depth, which the stagers check.
  const int steps = tile.k_end > tile.k_begin ? (tile.k_end - tile.k_begin + BK - 1) / BK : 0;
  if (steps > 0) {
    as.load(g, t, tile.ph, tile.k_begin);
    bs.load(g, t, tile.ph, tile.k_begin, tile.n0);
    store_stage(0);
  }
  __syncthreads();
  for (int step = 0; step < steps; ++step) {
    const int buf = step & 1;
    const bool more = step + 1 < steps;
    if (more) {
      as.load(g, t, tile.ph, tile.k_begin + (step + 1) * BK);
      bs.load(g, t, tile.ph, tile.k_begin + (step + 1) * BK, tile.n0);
    }
    compute(buf);
    if (more) store_stage(buf ^ 1);
    __syncthreads();
  }
}

// Launches one of a kernel file's two instantiations (vector staging path or not) with BM x BN
// tiles: grid x = pixel tiles of the largest phase, y = channel tiles, z = (sample * nphase +
// phase) * splits + split.
template <int BM, int BN, int Threads, class T>
void launch_modconv_tiles(void (*kernel)(ModConvGeometry, ModConvTensors<T>), const ModConvGeometry& g,
                          const ModConvTensors<T>& t, Stream stream) {
  int pixels = 0;
  for (int i = 0; i < g.nphase; ++i) pixels = std::max(pixels, g.ph[i].na * g.ph[i].nb);
  const dim3 grid(static_cast<unsigned>(ceil_div(pixels, BM)), static_cast<unsigned>(ceil_div(g.cout, BN)),
                  static_cast<unsigned>(g.n * g.nphase * g.splits));
  GPEN_LAUNCH(grid, Threads, 0, stream, kernel)(g, t);
}

// Launchers, one per kernel file (through launch_modconv_tiles). vec: kVec as for the stagers (the
// host checks the alignment).
template <class T>
void launch_modconv_wmma(const ModConvGeometry& g, const ModConvTensors<T>& t, bool vec, Stream stream);
// The mma.sync kernel (modconv_mma.cu): vector-staging shapes only, tile per shape (mma_tiles.h).
template <class T>
void launch_modconv_mma(const ModConvGeometry& g, const ModConvTensors<T>& t, Stream stream);
template <class T>
void launch_modconv_simt(const ModConvGeometry& g, const ModConvTensors<T>& t, bool vec, Stream stream);

GPEN_CUDA_NAMESPACE_END
