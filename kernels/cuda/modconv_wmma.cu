// The modulated conv as an implicit GEMM on tensor cores (WMMA 16x16x16, f16 / bf16 inputs, f32
// accumulation). See modconv.cuh for the GEMM (rows = output pixels of one sample and phase,
// depth = taps x input channels, prologue on A, epilogue on the output).
//
// Tiling: a block of 4 warps computes 128 pixels x 64 channels; warp (wm, wn) owns the 64 x 32
// sub-tile at (64 wm, 32 wn): 4 x 2 accumulator fragments, so each A fragment loaded from shared
// memory feeds two MMAs and each B fragment four. The depth is walked in steps of 32 with two
// shared-memory stages: the global loads of step k + 1 go to registers before the MMAs of step k
// are issued and land in the other stage after them, which hides most of the load latency with a
// single barrier per step and without cp.async (which the emulator lacks). The prologue
// (x * s, or act2(x2 * scale + bias) * s) runs in f32 between the two and is rounded once to T.
// Epilogue: the accumulators go through shared memory (which reuses the operand stages), then
// consecutive threads finish consecutive channels of a pixel.
//
// Rows of the shared tiles are padded by 8 halves / 4 floats: fragment pointers stay 32-byte
// aligned, ldm a multiple of 16 bytes, and the rows of a fragment spread over the banks.
#include "kernels/cuda/modconv.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kThreads = 128;
constexpr int kBM = 128, kBN = 64, kBK = 32;
constexpr int kPadAB = 8, kPadC = 4;

template <class T>
union WmmaSmem {
  struct {
    T a[2][kBM][kBK + kPadAB];
    T b[2][kBK][kBN + kPadAB];
  } ab;
  float c[kBM][kBN + kPadC];
};

template <class T, bool kVec>
__global__ void __launch_bounds__(kThreads, 3) modconv_wmma_kernel(const ModConvGeometry g, const ModConvTensors<T> t) {
  using namespace nvcuda;
  __shared__ __align__(32) WmmaSmem<T> sm;

  const int tid = threadIdx.x, warp = tid / 32;
  const int warp_m = warp / 2, warp_n = warp % 2;
  const int n = blockIdx.z / g.nphase, phase = blockIdx.z - n * g.nphase;
  const ModConvPhase ph = g.ph[phase];
  const int m0 = blockIdx.x * kBM, n0 = blockIdx.y * kBN;
  if (m0 >= ph.na * ph.nb) return;  // phases differ in size; the grid covers the largest (block-uniform)

  ModConvAStage<T, kBM, kBK, kThreads, kVec> as;
  ModConvBStage<T, kBK, kBN, kThreads, kVec> bs;
  as.init(g, t, ph, n, m0, tid);
  bs.init(tid);
  using AS = decltype(as);
  using BS = decltype(bs);

  auto store_stage = [&](int buf) {
    for (int i = 0; i < AS::kRows; ++i) {
      float v[AS::kV];
      as.finish(g, i, v);
      Vec16<T> o;
      for (int j = 0; j < AS::kV; ++j) o.v[j] = from_f32<T>(v[j]);
      *reinterpret_cast<Vec16<T>*>(&sm.ab.a[buf][as.row + i * AS::kRowStep][as.col]) = o;
    }
    for (int i = 0; i < BS::kRows; ++i)
      *reinterpret_cast<Vec16<T>*>(&sm.ab.b[buf][bs.row + i * BS::kRowStep][bs.col]) = bs.raw[i];
  };

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  const int steps = (ph.depth + kBK - 1) / kBK;
  if (steps > 0) {
    as.load(g, t, ph, 0);
    bs.load(g, t, ph, 0, n0);
    store_stage(0);
  }
  __syncthreads();
  for (int step = 0; step < steps; ++step) {
    const int buf = step & 1;
    const bool more = step + 1 < steps;
    if (more) {
      as.load(g, t, ph, (step + 1) * kBK);
      bs.load(g, t, ph, (step + 1) * kBK, n0);
    }
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a_frag[4];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b_frag[2];
      for (int i = 0; i < 4; ++i)
        wmma::load_matrix_sync(a_frag[i], &sm.ab.a[buf][warp_m * 64 + i * 16][kk], kBK + kPadAB);
      for (int j = 0; j < 2; ++j)
        wmma::load_matrix_sync(b_frag[j], &sm.ab.b[buf][kk][warp_n * 32 + j * 16], kBN + kPadAB);
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a_frag[i], b_frag[j], acc[i][j]);
    }
    // The other stage was last read in the previous step, before the barrier that ended it.
    if (more) store_stage(buf ^ 1);
    __syncthreads();
  }

  // The C tile reuses the operand stages: every warp is past the loop's last barrier.
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      wmma::store_matrix_sync(&sm.c[warp_m * 64 + i * 16][warp_n * 32 + j * 16], acc[i][j], kBN + kPadC,
                              wmma::mem_row_major);
  __syncthreads();
  const int pixels = ph.na * ph.nb;
  for (int e = tid; e < kBM * kBN; e += kThreads) {
    const int r = e / kBN, c = e % kBN;
    const int m = m0 + r, co = n0 + c;
    if (m >= pixels || co >= g.cout) continue;
    int oy, ox;
    modconv_pixel(g, ph, m, oy, ox);
    modconv_store(g, t, n, oy, ox, co, sm.c[r][c]);
  }
}

}  // namespace

template <class T>
void launch_modconv_wmma(const ModConvGeometry& g, const ModConvTensors<T>& t, bool vec, Stream stream) {
  int pixels = 0;
  for (int i = 0; i < g.nphase; ++i) pixels = std::max(pixels, g.ph[i].na * g.ph[i].nb);
  const dim3 grid(static_cast<unsigned>(ceil_div(pixels, kBM)), static_cast<unsigned>(ceil_div(g.cout, kBN)),
                  static_cast<unsigned>(g.n * g.nphase));
  if (vec)
    GPEN_LAUNCH(grid, kThreads, 0, stream, modconv_wmma_kernel<T, true>)(g, t);
  else
    GPEN_LAUNCH(grid, kThreads, 0, stream, modconv_wmma_kernel<T, false>)(g, t);
}

template void launch_modconv_wmma<__half>(const ModConvGeometry&, const ModConvTensors<__half>&, bool, Stream);
template void launch_modconv_wmma<__nv_bfloat16>(const ModConvGeometry&, const ModConvTensors<__nv_bfloat16>&, bool,
                                                 Stream);

GPEN_CUDA_NAMESPACE_END
