// GFPGANv1Clean -> .gpw (docs/weights-format.md, "Engine conventions: GFPGAN").
#include <cstring>

#include "converter/convert_internal.h"

namespace gpen::conv::convert_detail {

// GFPGANv1Clean: the official tensors hold their final values (plain nn.Conv2d / nn.Linear, the
// modulated convs' 1/sqrt(fan_in) already in the stored weight), so only layouts change.
void plan_gfpgan(const Checkpoint& ck, const Recognition& rec, DType wdt, GpwWriter& w) {
  const Checkpoint* ckp = &ck;
  const GfpganConfig& c = rec.gfpgan;
  for (const TensorSpec& s : rec.layout) {
    const std::string n = s.name;
    const std::vector<int64_t> sh = s.shape;
    // The intermediate RGB heads (return_rgb) feed only the training losses; with input_is_latent
    // the style MLP is never run. Neither reaches the restored image.
    if (n.rfind("toRGB.", 0) == 0) continue;
    if (c.input_is_latent && n.find(".style_mlp.") != std::string::npos) continue;
    if (ends_with(n, ".modulated_conv.weight")) {
      // (1, out, in, k, k) -> HWIO, plus sum_k W^2 per (out, in) for the demodulation (3x3 only:
      // ToRGB does not demodulate).
      const int64_t O = sh[1], I = sh[2], K = sh[3];
      add_computed(w, n, wdt, to_shape({K, K, I, O}), [ckp, n, O, I, K] {
        return to_hwio(Src{*ckp}.f32(n), O, I, K, 1.0f);
      });
      if (K == 3) {
        const std::string q = n.substr(0, n.size() - std::strlen(".weight")) + ".demod_q";
        add_computed(w, q, DType::f32, to_shape({O, I}), [ckp, n, O, I, K] {
          auto v = Src{*ckp}.f32(n);
          std::vector<float> r(static_cast<size_t>(O * I));
          for (int64_t oi = 0; oi < O * I; ++oi) {
            double acc = 0;
            for (int64_t k = 0; k < K * K; ++k) {
              const double x = v[static_cast<size_t>(oi * K * K + k)];
              acc += x * x;
            }
            r[static_cast<size_t>(oi)] = static_cast<float>(acc);
          }
          return r;
        });
      }
    } else if (n == "final_linear.weight") {
      // Columns from PyTorch's flatten order (c, y, x) to the engine's NHWC order (y, x, c).
      const int64_t O = sh[0], In = sh[1], C = In / 16;
      add_computed(w, n, wdt, to_shape({O, In}), [ckp, n, O, C] { return chw4x4_to_hwc(Src{*ckp}.f32(n), O, C); });
    } else if (n.find(".modulation.weight") != std::string::npos || n.find(".style_mlp.") != std::string::npos) {
      add_computed(w, n, wdt, to_shape({sh[0], sh[1]}), [ckp, n] { return Src{*ckp}.f32(n); });
    } else if (sh.size() == 4 && n.find("stylegan_decoder.") == 0) {
      // constant_input (1, C, 4, 4) -> NHWC (1, 4, 4, C); biases (1, C, 1, 1) and noise buffers
      // (1, 1, r, r) keep their element order as (C) and (r, r).
      if (n == "stylegan_decoder.constant_input.weight") {
        const int64_t C = sh[1];
        add_computed(w, n, DType::f32, to_shape({1, 4, 4, C}), [ckp, n, C] { return chw4x4_to_hwc(Src{*ckp}.f32(n), 1, C); });
      } else if (sh[1] == 1) {
        add_computed(w, n, DType::f32, to_shape({sh[2], sh[3]}), [ckp, n] { return Src{*ckp}.f32(n); });
      } else {
        add_computed(w, n, DType::f32, to_shape({sh[1]}), [ckp, n] { return Src{*ckp}.f32(n); });
      }
    } else if (sh.size() == 4) {
      // Plain convs (U-Net, condition branches): OIHW -> HWIO.
      add_computed(w, n, wdt, to_shape({sh[2], sh[3], sh[1], sh[0]}), [ckp, n, sh] {
        return to_hwio(Src{*ckp}.f32(n), sh[0], sh[1], sh[2], 1.0f);
      });
    } else {
      // Conv and linear biases, modulation biases, noise strengths: unchanged.
      Shape shape;
      for (int64_t d : sh) shape.d[shape.rank++] = d;
      add_computed(w, n, DType::f32, shape, [ckp, n] { return Src{*ckp}.f32(n); });
    }
  }
}

}  // namespace gpen::conv::convert_detail
