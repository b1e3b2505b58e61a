// The modulated conv as an implicit GEMM on the CUDA cores in f32 (the f32 path; f16/bf16 use
// modconv_wmma.cu). See modconv.cuh for the GEMM and the fused prologue / epilogue.
//
// Tiling: 256 threads compute 64 pixels x 64 channels, thread (ty, tx) of the 16 x 16 grid a 4 x 4
// register tile (rows 4 ty.., columns 4 tx..). Depth steps of 16 with two shared-memory stages
// filled through registers as in the WMMA kernel (global loads of step k + 1 are issued before
// the FMAs of step k). A is stored depth-major (a[k][m]) so the 4 A values of a thread are
// adjacent like its 4 B values. The epilogue runs straight from registers.
#include "kernels/cuda/modconv.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kThreads = 256;
constexpr int kBM = 64, kBN = 64, kBK = 16;
constexpr int kTM = 4, kTN = 4;
constexpr int kPad = 4;

template <class T, bool kVec>
__global__ void __launch_bounds__(kThreads) modconv_simt_kernel(const ModConvGeometry g, const ModConvTensors<T> t) {
  __shared__ __align__(16) float a_tile[2][kBK][kBM + kPad];
  __shared__ __align__(16) float b_tile[2][kBK][kBN + kPad];

  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const int n = blockIdx.z / g.nphase, phase = blockIdx.z - n * g.nphase;
  const ModConvPhase ph = g.ph[phase];
  const int m0 = blockIdx.x * kBM, n0 = blockIdx.y * kBN;
  if (m0 >= ph.na * ph.nb) return;  // block-uniform

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
      for (int j = 0; j < AS::kV; ++j) a_tile[buf][as.col + j][as.row + i * AS::kRowStep] = v[j];
    }
    for (int i = 0; i < BS::kRows; ++i)
      for (int j = 0; j < BS::kV; ++j) b_tile[buf][bs.row + i * BS::kRowStep][bs.col + j] = to_f32(bs.raw[i].v[j]);
  };

  float acc[kTM][kTN] = {};
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
    for (int kk = 0; kk < kBK; ++kk) {
      float a[kTM], b[kTN];
      for (int i = 0; i < kTM; ++i) a[i] = a_tile[buf][kk][ty * kTM + i];
      for (int j = 0; j < kTN; ++j) b[j] = b_tile[buf][kk][tx * kTN + j];
      for (int i = 0; i < kTM; ++i)
        for (int j = 0; j < kTN; ++j) acc[i][j] += a[i] * b[j];
    }
    if (more) store_stage(buf ^ 1);
    __syncthreads();
  }

  const int pixels = ph.na * ph.nb;
  for (int i = 0; i < kTM; ++i) {
    const int m = m0 + ty * kTM + i;
    if (m >= pixels) break;
    int oy, ox;
    modconv_pixel(g, ph, m, oy, ox);
    for (int j = 0; j < kTN; ++j) {
      const int co = n0 + tx * kTN + j;
      if (co < g.cout) modconv_store(g, t, n, oy, ox, co, acc[i][j]);
    }
  }
}

}  // namespace

template <class T>
void launch_modconv_simt(const ModConvGeometry& g, const ModConvTensors<T>& t, bool vec, Stream stream) {
  int pixels = 0;
  for (int i = 0; i < g.nphase; ++i) pixels = std::max(pixels, g.ph[i].na * g.ph[i].nb);
  const dim3 grid(static_cast<unsigned>(ceil_div(pixels, kBM)), static_cast<unsigned>(ceil_div(g.cout, kBN)),
                  static_cast<unsigned>(g.n * g.nphase));
  if (vec)
    GPEN_LAUNCH(grid, kThreads, 0, stream, modconv_simt_kernel<T, true>)(g, t);
  else
    GPEN_LAUNCH(grid, kThreads, 0, stream, modconv_simt_kernel<T, false>)(g, t);
}

template void launch_modconv_simt<float>(const ModConvGeometry&, const ModConvTensors<float>&, bool, Stream);

GPEN_CUDA_NAMESPACE_END
