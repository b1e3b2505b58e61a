#pragma once
// The argument checks of modconv that do not depend on the device: which inputs are present and
// how their shapes agree. cpu::modconv and cuda::modconv add their own (dtypes, layouts, launch
// limits) around these, so both reject the same malformed calls with the same messages.
#include <cstdint>
#include <string>

#include "engine/core/error.h"
#include "engine/core/tensor.h"
#include "kernels/params.h"

namespace gpen {

// The presence of every input agrees with the params; x, w and s are there.
inline void check_modconv_inputs(const ModConvParams& p, const ModConvArgs& a) {
  GPEN_CHECK(a.x && a.w && a.s, "modconv: x, w and s are required");
  GPEN_CHECK(p.has_x2 == (a.x2 != nullptr), "modconv: second source presence does not match params");
  GPEN_CHECK(p.has_demod == (a.d != nullptr), "modconv: demod presence does not match params");
  GPEN_CHECK(p.has_bias == (a.bias != nullptr), "modconv: bias presence does not match params");
  GPEN_CHECK(p.has_residual == (a.residual != nullptr), "modconv: residual presence does not match params");
}

// The shapes of x (x2), w, s, d, bias, residual and y agree; returns the concatenated input
// shape [N, H, W, C]. Call after check_modconv_inputs.
inline Shape check_modconv_shapes(const ModConvParams& p, const ModConvArgs& a, const TensorView& y) {
  const TensorView& x = *a.x;
  GPEN_CHECK(x.rank() == 4 && y.rank() == 4,
             "modconv: x and y must be NHWC, got " + x.shape.str() + " and " + y.shape.str());
  const int64_t N = y.dim(0), H = x.dim(1), W = x.dim(2);
  GPEN_CHECK(x.dim(0) == N || x.dim(0) == 1, "modconv: batch of x " + x.shape.str() + " vs output " + y.shape.str());
  int64_t C = x.dim(3);
  if (a.x2) {
    const TensorView& x2 = *a.x2;
    GPEN_CHECK(
        x2.rank() == 4 && x2.dim(0) == N && x2.dim(1) == H && x2.dim(2) == W,
        "modconv: second source " + x2.shape.str() + " does not match x " + x.shape.str() + " / y " + y.shape.str());
    GPEN_CHECK(a.x2_scale && a.x2_scale->numel() >= 1, "modconv: second source needs a scale");
    GPEN_CHECK(a.x2_bias && a.x2_bias->numel() == x2.dim(3) && a.x2_bias->rank() >= 1,
               "modconv: second source needs " + std::to_string(x2.dim(3)) + " biases");
    C += x2.dim(3);
  }
  const TensorView& w = *a.w;
  GPEN_CHECK(w.rank() == 4 && w.dim(0) == p.k && w.dim(1) == p.k && w.dim(2) == C,
             "modconv: weight " + w.shape.str() + " for k=" + std::to_string(p.k) + " and " + std::to_string(C) +
                 " input channels");
  const int64_t Co = w.dim(3);
  GPEN_CHECK(a.s->rank() == 2 && a.s->dim(0) == N && a.s->dim(1) == C,
             "modconv: style " + a.s->shape.str() + " must be [" + std::to_string(N) + ", " + std::to_string(C) + "]");
  GPEN_CHECK(p.pad_top >= -1 && p.pad_bottom >= -1 && p.top() < p.k && p.bottom() < p.k,
             "modconv: row padding " + std::to_string(p.pad_top) + " / " + std::to_string(p.pad_bottom) +
                 " outside [0, k) for k=" + std::to_string(p.k));
  GPEN_CHECK(!p.up || (p.top() == p.k / 2 && p.bottom() == p.k / 2),
             "modconv: the upsampling conv takes no row padding (crop_top / crop_bottom crop its rows)");
  GPEN_CHECK(p.up || (p.crop_top == 0 && p.crop_bottom == 0),
             "modconv: crop_top / crop_bottom are for the upsampling conv (pad_top / pad_bottom crop this one)");
  GPEN_CHECK(p.crop_top >= 0 && p.crop_bottom >= 0,
             "modconv: negative row crop " + std::to_string(p.crop_top) + " / " + std::to_string(p.crop_bottom));
  const int64_t Ho = p.out_rows(H);
  const int64_t Wo = p.up ? 2 * (W - 1) + p.k : W;
  GPEN_CHECK(Ho >= 1, "modconv: row " + std::string(p.up ? "crop " : "padding ") +
                          std::to_string(p.up ? p.crop_top : p.top()) + " / " +
                          std::to_string(p.up ? p.crop_bottom : p.bottom()) + " leaves no output rows of " +
                          std::to_string(H) + " input rows");
  GPEN_CHECK(y.dim(1) == Ho && y.dim(2) == Wo && y.dim(3) == Co,
             "modconv: output " + y.shape.str() + ", expected [" + std::to_string(N) + ", " + std::to_string(Ho) +
                 ", " + std::to_string(Wo) + ", " + std::to_string(Co) + "]");
  if (p.up)
    GPEN_CHECK(!a.d && !a.bias && !a.residual && p.act.is_identity(),
               "modconv: the upsampling conv has no epilogue (the blur after it applies it)");
  if (a.d)
    GPEN_CHECK(a.d->rank() == 2 && a.d->dim(0) == N && a.d->dim(1) == Co,
               "modconv: demod " + a.d->shape.str() + " must be [N, Cout]");
  if (a.bias) GPEN_CHECK(a.bias->numel() == Co && a.bias->rank() >= 1, "modconv: bias must have Cout values");
  if (a.residual)
    GPEN_CHECK(a.residual->shape == y.shape,
               "modconv: residual " + a.residual->shape.str() + " must be " + y.shape.str());
  return Shape{N, H, W, C};
}

}  // namespace gpen
