// CodeFormer's PositionEmbeddingSine, computed once when a graph is planned (a constant input of
// the attention layers, not an op that runs). For position (i, j) of an H x W map, with 1-based
// coordinates y = i + 1 and x = j + 1 (divided by H + eps, W + eps and multiplied by scale when
// normalised), and dim_t[k] = temperature ^ (2 floor(k / 2) / F) for k < F (F = num_pos_feats):
//   channel k < F       : y / dim_t[k], sin for even k and cos for odd k
//   channel F + k       : the same with x
// The official module computes in f32 (torch.float32 cumsum, pow and division); so does this,
// with sin and cos of the f32 argument.
#include <cmath>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/strided.h"

namespace gpen::cpu {

void position_embedding_sine(const PositionSineParams& p, const TensorView& y) {
  detail::check_f32(y, "position_embedding_sine", "output");
  detail::check_rank(y, 3, "position_embedding_sine", "output");
  const int64_t H = y.dim(0), W = y.dim(1), F = p.num_pos_feats;
  GPEN_CHECK(F > 0 && F % 2 == 0 && y.dim(2) == 2 * F,
             "position_embedding_sine: output " + y.shape.str() + " must have 2 x num_pos_feats channels, " +
                 "num_pos_feats even, got " + std::to_string(F));
  std::vector<float> dim_t(static_cast<size_t>(F));
  for (int64_t k = 0; k < F; ++k)
    dim_t[static_cast<size_t>(k)] = std::pow(p.temperature, static_cast<float>(2 * (k / 2)) / static_cast<float>(F));
  constexpr float kEps = 1e-6f;
  for (int64_t i = 0; i < H; ++i)
    for (int64_t j = 0; j < W; ++j) {
      float ye = static_cast<float>(i + 1), xe = static_cast<float>(j + 1);
      if (p.normalize) {
        ye = ye / (static_cast<float>(H) + kEps) * p.scale;
        xe = xe / (static_cast<float>(W) + kEps) * p.scale;
      }
      float* out = y.f32() + i * y.stride(0) + j * y.stride(1);
      for (int64_t k = 0; k < F; ++k) {
        const float ay = ye / dim_t[static_cast<size_t>(k)], ax = xe / dim_t[static_cast<size_t>(k)];
        out[k * y.stride(2)] = k % 2 == 0 ? std::sin(ay) : std::cos(ay);
        out[(F + k) * y.stride(2)] = k % 2 == 0 ? std::sin(ax) : std::cos(ax);
      }
    }
}

}  // namespace gpen::cpu
