// RestoreFormer++ / RestoreFormer -> .gpw (docs/weights-format.md, "Engine conventions:
// RestoreFormer++").
#include "converter/convert_internal.h"

namespace gpen::conv::convert_detail {

// Names lose the checkpoint's "vqvae." prefix. Convs go to HWIO (the 1x1 quant_conv,
// post_quant_conv and nin_shortcut too); each MultiHeadAttnBlock's 1x1 q, k, v convs are packed
// as one [3C, C] in-projection (the attention op's in_proj_weight rows, heads as consecutive
// channel groups as the official reshape splits them) and proj_out is kept as [C, C]; norms,
// biases and the codebook keep their PyTorch layouts. The encoder's attention blocks hold a norm2
// their forward never uses: it is not written.
void plan_restoreformer(const Checkpoint& ck, const Recognition& rec, DType wdt, GpwWriter& w) {
  const Checkpoint* ckp = &ck;
  const std::string pre = rec.restoreformer.key_prefix;
  auto is = [](const std::string& n, const char* module) {
    return ends_with(n, (std::string(module) + ".weight").c_str()) || ends_with(n, (std::string(module) + ".bias").c_str());
  };
  for (const TensorSpec& s : rec.layout) {
    const std::string src = s.name;
    const std::string n = src.substr(pre.size());
    const std::vector<int64_t> sh = s.shape;
    const bool encoder = n.rfind("encoder.", 0) == 0;
    if (is(n, ".k") || is(n, ".v")) continue;  // packed with .q
    if (encoder && is(n, ".norm2") && n.find(".attn") != std::string::npos) continue;
    if (is(n, ".q")) {
      const std::string p = n.substr(0, n.rfind(".q."));
      const std::string sp = pre + p;
      const int64_t C = sh[0];
      const bool weight = ends_with(n, ".weight");
      const std::string part = weight ? ".weight" : ".bias";
      add_computed(w, p + (weight ? ".in_proj_weight" : ".in_proj_bias"), weight ? wdt : DType::f32,
                   weight ? to_shape({3 * C, C}) : to_shape({3 * C}), [ckp, sp, part] {
                     std::vector<float> r;
                     for (const char* m : {".q", ".k", ".v"}) {
                       const std::vector<float> v = Src{*ckp}.f32(sp + m + part);
                       r.insert(r.end(), v.begin(), v.end());
                     }
                     return r;
                   });
    } else if (ends_with(n, ".proj_out.weight")) {
      add_computed(w, n, wdt, to_shape({sh[0], sh[1]}), [ckp, src] { return Src{*ckp}.f32(src); });
    } else if (sh.size() == 4) {
      add_computed(w, n, wdt, to_shape({sh[2], sh[3], sh[1], sh[0]}), [ckp, src, sh] {
        return to_hwio(Src{*ckp}.f32(src), sh[0], sh[1], sh[2], 1.0f);
      });
    } else {
      Shape shape;
      for (int64_t d : sh) shape.d[shape.rank++] = d;
      add_computed(w, n, sh.size() == 2 ? wdt : DType::f32, shape, [ckp, src] { return Src{*ckp}.f32(src); });
    }
  }
}

}  // namespace gpen::conv::convert_detail
