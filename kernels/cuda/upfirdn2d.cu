// NHWC upfirdn2d: zero-insertion upsampling, padding (negative pads crop), a true 2-D convolution
// with the FIR kernel, downsampling; then the optional epilogue y = act(y * out_scale[n, c] +
// bias[c]). Output pixel (oy, ox) reads the upsampled, padded signal at (oy * down + ky - pad0)
// for each tap; only positions that are multiples of `up` hold input samples, the rest are the
// inserted zeros and are skipped. The taps travel in the kernel's parameters, stored flipped so
// the loop is a plain correlation. One thread per output element, channels fastest.
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/nhwc_index.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kThreads = 256;
constexpr int kMaxTaps = 256;  // 16 x 16; GPEN's blur is 4 x 4

struct FirShape {
  int64_t n, h, w, c, ho, wo;
  int up_x, up_y, down_x, down_y, pad_x0, pad_y0;
  int kh, kw;
  NhwcStrides xs, ys;
  int64_t scale_n, scale_c;  // out_scale strides
  int64_t bias_c;
  Activation act;
  float taps[kMaxTaps];  // flipped: taps[ky * kw + kx] = kernel[kh-1-ky][kw-1-kx]
};

template <class T>
__global__ void __launch_bounds__(kThreads)
    upfirdn2d_kernel(const FirShape s, const T* x, const T* out_scale, const T* bias, T* y) {
  for_each_nhwc(s.n, s.ho, s.wo, s.c, [&](const NhwcIndex e) {
    const int64_t n = e.n, oy = e.y, ox = e.x, c = e.c;
    const T* xn = x + n * s.xs.n + c * s.xs.c;
    float acc = 0.0f;
    for (int ky = 0; ky < s.kh; ++ky) {
      const int64_t uy = oy * s.down_y + ky - s.pad_y0;  // row in the upsampled signal
      if (uy < 0 || uy % s.up_y != 0 || uy / s.up_y >= s.h) continue;
      const T* xrow = xn + (uy / s.up_y) * s.xs.h;
      for (int kx = 0; kx < s.kw; ++kx) {
        const int64_t ux = ox * s.down_x + kx - s.pad_x0;
        if (ux < 0 || ux % s.up_x != 0 || ux / s.up_x >= s.w) continue;
        acc += to_f32(xrow[(ux / s.up_x) * s.xs.w]) * s.taps[ky * s.kw + kx];
      }
    }
    if (out_scale) acc *= to_f32(out_scale[n * s.scale_n + c * s.scale_c]);
    if (bias) acc += to_f32(bias[c * s.bias_c]);
    y[n * s.ys.n + oy * s.ys.h + ox * s.ys.w + c * s.ys.c] = from_f32<T>(activate(s.act, acc));
  });
}

}  // namespace

size_t upfirdn2d_workspace_bytes(const UpFirDn2dParams&, const Shape&, const Shape&) { return 0; }

void upfirdn2d(const UpFirDn2dParams& p, const TensorView& x, const TensorView* out_scale, const TensorView* bias,
               const TensorView& y, void*, Stream stream) {
  const char* op = "upfirdn2d";
  check_view(x, x.dtype, op, "input");
  check_view(y, x.dtype, op, "output");
  check_rank(x, 4, op, "input");
  check_rank(y, 4, op, "output");
  GPEN_CHECK(p.up_x >= 1 && p.up_y >= 1 && p.down_x >= 1 && p.down_y >= 1,
             "upfirdn2d: up and down factors must be positive");
  GPEN_CHECK(p.kh >= 1 && p.kw >= 1 && p.kh * p.kw <= kMaxTaps,
             "upfirdn2d: kernel " + std::to_string(p.kh) + "x" + std::to_string(p.kw) + " must have 1 to " +
                 std::to_string(kMaxTaps) + " taps");
  GPEN_CHECK(static_cast<int64_t>(p.kernel.size()) == int64_t{p.kh} * p.kw,
             "upfirdn2d: kernel has " + std::to_string(p.kernel.size()) + " taps, expected " +
                 std::to_string(p.kh * p.kw));
  const int64_t N = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3);
  const int64_t span_y = H * p.up_y + p.pad_y0 + p.pad_y1 - p.kh, span_x = W * p.up_x + p.pad_x0 + p.pad_x1 - p.kw;
  GPEN_CHECK(span_y >= 0 && span_x >= 0, "upfirdn2d: kernel larger than the padded input " + x.shape.str());
  const int64_t Ho = span_y / p.down_y + 1, Wo = span_x / p.down_x + 1;
  GPEN_CHECK(y.dim(0) == N && y.dim(1) == Ho && y.dim(2) == Wo && y.dim(3) == C,
             "upfirdn2d: output shape " + y.shape.str() + " must be [" + std::to_string(N) + ", " +
                 std::to_string(Ho) + ", " + std::to_string(Wo) + ", " + std::to_string(C) + "]");
  GPEN_CHECK(p.has_out_scale == (out_scale != nullptr), "upfirdn2d: has_out_scale does not match the out_scale argument");
  GPEN_CHECK(p.has_bias == (bias != nullptr), "upfirdn2d: has_bias does not match the bias argument");
  if (out_scale) {
    check_view(*out_scale, x.dtype, op, "out_scale");
    GPEN_CHECK(out_scale->rank() == 2 && out_scale->dim(0) == N && out_scale->dim(1) == C,
               "upfirdn2d: out_scale must be [N, C] = [" + std::to_string(N) + ", " + std::to_string(C) + "], got " +
                   out_scale->shape.str());
  }
  if (bias) {
    check_view(*bias, x.dtype, op, "bias");
    GPEN_CHECK(bias->rank() == 1 && bias->dim(0) == C,
               "upfirdn2d: bias must be [" + std::to_string(C) + "], got " + bias->shape.str());
  }
  if (y.numel() == 0) return;

  FirShape s{};
  s.n = N, s.h = H, s.w = W, s.c = C, s.ho = Ho, s.wo = Wo;
  s.up_x = p.up_x, s.up_y = p.up_y, s.down_x = p.down_x, s.down_y = p.down_y;
  s.pad_x0 = p.pad_x0, s.pad_y0 = p.pad_y0, s.kh = p.kh, s.kw = p.kw;
  s.xs = nhwc_strides(x), s.ys = nhwc_strides(y);
  s.scale_n = out_scale ? out_scale->stride(0) : 0, s.scale_c = out_scale ? out_scale->stride(1) : 0;
  s.bias_c = bias ? bias->stride(0) : 0;
  s.act = p.act;
  for (int ky = 0; ky < p.kh; ++ky)
    for (int kx = 0; kx < p.kw; ++kx) s.taps[ky * p.kw + kx] = p.kernel[(p.kh - 1 - ky) * p.kw + (p.kw - 1 - kx)];

  dispatch_float(x.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    GPEN_LAUNCH(grid_for(y.numel(), kThreads), kThreads, 0, stream, upfirdn2d_kernel<T>)(
        s, x.as<const T>(), out_scale ? out_scale->as<const T>() : nullptr, bias ? bias->as<const T>() : nullptr,
        y.as<T>());
  });
  check_launch(op);
}

GPEN_CUDA_NAMESPACE_END
