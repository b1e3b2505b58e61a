// CodeFormer -> .gpw (docs/weights-format.md, "Engine conventions: CodeFormer").
#include <cstring>

#include "converter/convert_internal.h"

namespace gpen::conv::convert_detail {

namespace {

bool attn_projection(const std::string& n, const char* m) {
  return ends_with(n, (std::string(m) + ".weight").c_str()) || ends_with(n, (std::string(m) + ".bias").c_str());
}

}  // namespace

// Every tensor of the layout reaches the restored image (the quantizer's codebook through the
// code lookup, the fuse blocks at w > 0), so none is dropped. Convs go to HWIO; the 1x1 q, k, v
// convs of VQGAN's AttnBlocks are packed as one [3C, C] in-projection (the attention op's
// in_proj_weight rows) and proj_out is kept as [C, C]; linear layers, norms, the codebook and
// position_emb keep their PyTorch layouts.
void plan_codeformer(const Checkpoint& ck, const Recognition& rec, DType wdt, GpwWriter& w) {
  const Checkpoint* ckp = &ck;
  for (const TensorSpec& s : rec.layout) {
    const std::string n = s.name;
    const std::vector<int64_t> sh = s.shape;
    const bool vq = n.rfind("encoder.blocks.", 0) == 0 || n.rfind("generator.blocks.", 0) == 0;
    if (vq && (attn_projection(n, ".k") || attn_projection(n, ".v"))) continue;  // packed with .q
    if (vq && attn_projection(n, ".q")) {
      const std::string p = n.substr(0, n.rfind(".q."));
      const int64_t C = sh[0];
      if (ends_with(n, ".weight")) {
        add_computed(w, p + ".in_proj_weight", wdt, to_shape({3 * C, C}), [ckp, p] {
          std::vector<float> r;
          for (const char* m : {".q", ".k", ".v"}) {
            const std::vector<float> v = Src{*ckp}.f32(p + m + ".weight");
            r.insert(r.end(), v.begin(), v.end());
          }
          return r;
        });
      } else {
        add_computed(w, p + ".in_proj_bias", DType::f32, to_shape({3 * C}), [ckp, p] {
          std::vector<float> r;
          for (const char* m : {".q", ".k", ".v"}) {
            const std::vector<float> v = Src{*ckp}.f32(p + m + ".bias");
            r.insert(r.end(), v.begin(), v.end());
          }
          return r;
        });
      }
    } else if (vq && ends_with(n, ".proj_out.weight")) {
      add_computed(w, n, wdt, to_shape({sh[0], sh[1]}), [ckp, n] { return Src{*ckp}.f32(n); });
    } else if (sh.size() == 4) {
      add_computed(w, n, wdt, to_shape({sh[2], sh[3], sh[1], sh[0]}), [ckp, n, sh] {
        return to_hwio(Src{*ckp}.f32(n), sh[0], sh[1], sh[2], 1.0f);
      });
    } else if (n == "position_emb") {
      // [L, E] as the attention's [1, L, E] position input.
      add_computed(w, n, DType::f32, to_shape({1, sh[0], sh[1]}), [ckp, n] { return Src{*ckp}.f32(n); });
    } else {
      // Linear weights [out, in] (the dense op's layout), the codebook, biases and norms.
      Shape shape;
      for (int64_t d : sh) shape.d[shape.rank++] = d;
      const bool matrix = sh.size() == 2;
      add_computed(w, n, matrix ? wdt : DType::f32, shape, [ckp, n] { return Src{*ckp}.f32(n); });
    }
  }
}

}  // namespace gpen::conv::convert_detail
