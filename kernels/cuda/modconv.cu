// modconv on the GPU: argument checks (those of cpu::modconv plus the dtype and the weight's
// layout), the GEMM geometry of modconv.cuh, and the choice of kernel: tensor cores for f16 /
// bf16 (modconv_mma.cu, mma.sync, by default on the vector path; modconv_wmma.cu for 8-bit weights,
// the element path and GPEN_CUDA_GEMM=wmma), the SIMT kernel for f32 (modconv_simt.cu). All fuse the prologue
// (style scaling, the on-the-fly x2 source) and the epilogue (demodulation, bias, activation,
// residual, strided store into a channel slice), so one launch does the whole op.
#include <climits>
#include <cstdint>

#include "kernels/cuda/modconv.cuh"
#include "kernels/cuda/splitk.cuh"
#include "kernels/cuda/ops_gemm.h"
#include "kernels/cuda/ops_gpen.h"
#include "kernels/modconv_check.h"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kMaxK = 7;  // as the CPU op

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Whether 16-byte vectors of kv elements can be loaded at every kv-aligned channel of an NHWC view.
bool nhwc_vec_ok(const TensorView& v, int kv) {
  if (!aligned16(v.data) || v.stride(3) != 1) return false;
  for (int a = 0; a < 3; ++a)
    if (v.dim(a) > 1 && v.stride(a) % kv != 0) return false;
  return true;
}

void check_shapes(const ModConvParams& p, const Shape& x_cat, const Shape& y) {
  GPEN_CHECK(x_cat.rank == 4 && y.rank == 4,
             "modconv: x and y must be NHWC, got " + x_cat.str() + " and " + y.str());
  GPEN_CHECK(p.k >= 1 && p.k <= kMaxK, "modconv: kernel size " + std::to_string(p.k) + " outside [1, 7]");
  for (int i = 0; i < 4; ++i)
    GPEN_CHECK(fits_int(x_cat[i]) && fits_int(y[i]) && x_cat[i] <= (1 << 20) && y[i] <= (1 << 20),
               "modconv: implausible dimensions " + x_cat.str() + " -> " + y.str());
  GPEN_CHECK(fits_int(y[1] * y[2]) && fits_int(int64_t{p.k} * p.k * x_cat[3]),
             "modconv: " + x_cat.str() + " -> " + y.str() + " is too large for one call");
}

void validate(const ModConvParams& p, const ModConvArgs& a, const TensorView& y) {
  check_modconv_inputs(p, a);
  const DType dt = a.x->dtype;
  auto same = [&](const TensorView* v, const char* what) {
    if (v) check_view(*v, dt, "modconv", what);
  };
  same(a.x, "x"), same(a.x2, "x2"), same(a.x2_scale, "x2_scale"), same(a.x2_bias, "x2_bias");
  if (a.w && !dtype_is_8bit_weight(a.w->dtype)) same(a.w, "w");  // 8-bit weights: any activation dtype
  if (a.w) weight8_of(*a.w, "modconv");                           // checks the scales
  same(a.s, "s"), same(a.d, "d"), same(a.bias, "bias"), same(a.residual, "residual"), same(&y, "y");
  const Shape x_cat = check_modconv_shapes(p, a, y);
  GPEN_CHECK(a.w->contiguous(), "modconv: the weight must be contiguous HWIO");
  check_shapes(p, x_cat, y.shape);
  const int64_t N = x_cat[0], Co = a.w->dim(3);
  GPEN_CHECK(N * (p.up ? 4 : 1) <= 65535, "modconv: batch " + std::to_string(N) + " too large for one launch");
  GPEN_CHECK(Co <= 64 * 65535, "modconv: too many output channels (" + std::to_string(Co) + ")");
}

ModConvGeometry make_geometry(const ModConvParams& p, const ModConvArgs& a, const TensorView& y) {
  const TensorView& x = *a.x;
  ModConvGeometry g;
  g.n = static_cast<int>(y.dim(0));
  g.h = static_cast<int>(x.dim(1)), g.w = static_cast<int>(x.dim(2));
  g.c1 = static_cast<int>(x.dim(3));
  g.c2 = a.x2 ? static_cast<int>(a.x2->dim(3)) : 0;
  g.c = g.c1 + g.c2;
  g.cout = static_cast<int>(a.w->dim(3));
  g.k = p.k;
  const int ho = static_cast<int>(y.dim(1)), wo = static_cast<int>(y.dim(2));
  if (!p.up) {
    g.nphase = 1;
    g.ostep = 1, g.kstep = 1, g.dstep = 1;
    g.dy0 = -p.top(), g.dx0 = -(p.k / 2);  // a row crop (ModConvParams::pad_top) shifts the taps
    ModConvPhase& ph = g.ph[0];
    ph.na = ho, ph.nb = wo;
    ph.ntx = p.k;
    ph.depth = p.k * p.k * g.c;
  } else {
    // Phase (py, px): outputs (2a + py, 2b + px), taps ky = py + 2 ty, input row a - ty. A row
    // crop (ModConvParams::crop_top) makes output row 2a + py the whole op's row 2a + py +
    // crop_top: its taps start at that row's parity fy, from input row a + ay - ty.
    g.nphase = 4;
    g.ostep = 2, g.kstep = 2, g.dstep = -1;
    g.dy0 = g.dx0 = 0;
    for (int py = 0; py < 2; ++py)
      for (int px = 0; px < 2; ++px) {
        ModConvPhase& ph = g.ph[py * 2 + px];
        const int fy = (py + p.crop_top) % 2;
        ph.py = py, ph.px = px;
        ph.ay = (py + p.crop_top) / 2;
        ph.na = (ho - py + 1) / 2, ph.nb = (wo - px + 1) / 2;
        ph.ky0 = fy, ph.kx0 = px;
        const int nty = (p.k - fy + 1) / 2;
        ph.ntx = (p.k - px + 1) / 2;
        ph.depth = nty * ph.ntx * g.c;
      }
  }
  g.ho = ho, g.wo = wo;
  g.kchunk = 0;
  for (int i = 0; i < g.nphase; ++i) g.kchunk = std::max(g.kchunk, g.ph[i].depth);
  g.xs = nhwc_strides(x);
  if (x.dim(0) == 1) g.xs.n = 0;  // broadcast over the batch
  if (a.x2) g.x2s = nhwc_strides(*a.x2);
  g.ys = nhwc_strides(y);
  if (a.residual) g.rs = nhwc_strides(*a.residual);
  g.s_n = a.s->stride(0), g.s_c = a.s->stride(1);
  if (a.d) g.d_n = a.d->stride(0), g.d_c = a.d->stride(1);
  if (a.bias) g.bias_c = a.bias->stride(a.bias->rank() - 1);
  if (a.x2) g.x2b_c = a.x2_bias->stride(a.x2_bias->rank() - 1);
  g.act = p.act;
  g.x2_act = p.x2_act;
  return g;
}

// The depth split of a call, from the shapes alone (so the planner can size the workspace): the
// tiles of the launch (counted with the tensor-core kernel's 128 x 64, which the f32 kernel's
// smaller tiles only make more numerous) and the deepest phase.
SplitK modconv_split(const ModConvParams& p, const Shape& x_cat, const Shape& y) {
  // A band of a larger output splits as the whole output does (ModConvParams::split_rows).
  const int64_t n = y[0], ho = p.split_rows > 0 ? p.split_rows : y[1], wo = y[2], cout = y[3], c = x_cat[3];
  const int64_t nphase = p.up ? 4 : 1;
  const int64_t pixels = p.up ? ((ho + 1) / 2) * ((wo + 1) / 2) : ho * wo;
  const int64_t taps = p.up ? int64_t{(p.k + 1) / 2} * ((p.k + 1) / 2) : int64_t{p.k} * p.k;
  const int64_t tiles = ceil_div(pixels, 128) * ceil_div(cout, 64) * n * nphase;
  return choose_split_k(tiles, taps * c, n * ho * wo * cout * 4,
                        std::max<int64_t>(1, 65535 / std::max<int64_t>(1, n * nphase)));
}

template <class T>
struct ModConvSplitFinish {
  ModConvGeometry g;
  ModConvTensors<T> t;
  __device__ void operator()(int64_t i, float acc) const {
    const int co = static_cast<int>(i % g.cout);
    int64_t rest = i / g.cout;
    const int ox = static_cast<int>(rest % g.wo);
    rest /= g.wo;
    const int oy = static_cast<int>(rest % g.ho);
    modconv_store(g, t, static_cast<int>(rest / g.ho), oy, ox, co, acc);
  }
};

// Whether the 16-byte vector stagers apply (see ModConvAStage / ModConvBStage).
bool vector_path(const ModConvArgs& a, const ModConvGeometry& g, int kv) {
  if (g.c1 % kv != 0 || g.c2 % kv != 0 || g.cout % kv != 0) return false;
  if (!nhwc_vec_ok(*a.x, kv) || (a.x2 && !nhwc_vec_ok(*a.x2, kv))) return false;
  if (!aligned16(a.s->data) || g.s_c != 1 || (g.n > 1 && g.s_n % kv != 0)) return false;
  if (a.x2 && (!aligned16(a.x2_bias->data) || g.x2b_c != 1)) return false;
  if (dtype_is_8bit_weight(a.w->dtype)) return aligned16(a.w->data) && aligned16(a.w->qscale);  // kV codes, kV scales
  return aligned16(a.w->data);
}

}  // namespace

size_t modconv_workspace_bytes(const ModConvParams& p, const Shape& x_cat, const Shape& y) {
  check_shapes(p, x_cat, y);
  return split_k_workspace_bytes(modconv_split(p, x_cat, y), y.numel());
}

void modconv(const ModConvParams& p, const ModConvArgs& a, const TensorView& y, void* workspace, Stream stream) {
  validate(p, a, y);
  if (y.numel() == 0) return;
  ModConvGeometry g = make_geometry(p, a, y);
  Shape x_cat = a.x->shape;
  x_cat[3] = g.c;
  const SplitK sk = modconv_split(p, x_cat, y.shape);
  require_split_k_workspace(sk, workspace, "modconv", x_cat, y.shape);
  if (sk.splits > 1) {
    g.splits = sk.splits;
    g.kchunk = sk.chunk;
  }
  dispatch_float(y.dtype, "modconv", [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto ptr = [](const TensorView* v) { return v ? v->as<const T>() : nullptr; };
    ModConvTensors<T> t{ptr(a.x), ptr(a.x2), ptr(a.x2_scale), ptr(a.x2_bias), ptr(a.w),
                        ptr(a.s), ptr(a.d),  ptr(a.bias),     ptr(a.residual), y.as<T>()};
    if (g.splits > 1) t.partial = static_cast<float*>(workspace);
    t.w8 = weight8_of(*a.w, "modconv");
    if (t.w8.codes) t.w = nullptr;
    const bool vec = vector_path(a, g, Vec16<T>::n);
    if constexpr (std::is_same_v<T, float>)
      launch_modconv_simt<T>(g, t, vec, stream);
    else if (vec && !t.w8.codes && gemm_family() == GemmFamily::mma)  // 8-bit weights: WMMA stages them
      launch_modconv_mma<T>(g, t, stream);
    else
      launch_modconv_wmma<T>(g, t, vec, stream);
    if (g.splits > 1)
      launch_split_k_reduce("modconv", y.numel(), g.splits, t.partial, ModConvSplitFinish<T>{g, t}, stream);
  });
  check_launch("modconv");
}

GPEN_CUDA_NAMESPACE_END
