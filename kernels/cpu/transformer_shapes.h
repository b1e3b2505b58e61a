#pragma once
// The shape rules of the attention and code_lookup ops (kernels/params.h), shared by the CPU
// kernels and their CUDA twins, which check the dtypes themselves: gpen::Error naming the operand.
#include <string>

#include "engine/core/error.h"
#include "engine/core/tensor.h"
#include "kernels/params.h"

namespace gpen::kernels {

// x [N, L, E] with E divisible by the heads; pos [1 or N, L, E]; query like x; projections [3E, E], [3E], [E, E],
// [E]; y like x.
inline void check_attention_shapes(const AttentionParams& p, const AttentionArgs& a, const TensorView& y) {
  GPEN_CHECK(a.x && a.in_w && a.in_b && a.out_w && a.out_b, "attention: missing operand");
  const TensorView& x = *a.x;
  GPEN_CHECK(x.rank() == 3, "attention: input must be [N, L, E], got " + x.shape.str());
  GPEN_CHECK(x.shape == y.shape, "attention: input " + x.shape.str() + " and output " + y.shape.str() + " differ");
  const int64_t N = x.dim(0), L = x.dim(1), E = x.dim(2);
  GPEN_CHECK(p.heads > 0 && E % p.heads == 0, "attention: embedding " + std::to_string(E) +
                                                  " does not split into " + std::to_string(p.heads) + " heads");
  GPEN_CHECK(p.has_pos == (a.pos != nullptr), "attention: has_pos does not match the pos argument");
  GPEN_CHECK(p.has_query == (a.query != nullptr), "attention: has_query does not match the query argument");
  if (a.query)
    GPEN_CHECK(a.query->shape == x.shape,
               "attention: queries " + a.query->shape.str() + " must be shaped as the keys " + x.shape.str());
  if (a.pos)
    GPEN_CHECK(a.pos->rank() == 3 && (a.pos->dim(0) == 1 || a.pos->dim(0) == N) && a.pos->dim(1) == L &&
                   a.pos->dim(2) == E,
               "attention: pos " + a.pos->shape.str() + " must be [1 or " + std::to_string(N) + ", " +
                   std::to_string(L) + ", " + std::to_string(E) + "]");
  const auto matrix = [](const TensorView& t, const Shape& want, const char* what) {
    GPEN_CHECK(t.shape == want, std::string("attention: ") + what + " " + t.shape.str() + " must be " + want.str());
  };
  matrix(*a.in_w, Shape{3 * E, E}, "in-projection weight");
  matrix(*a.in_b, Shape{3 * E}, "in-projection bias");
  matrix(*a.out_w, Shape{E, E}, "out-projection weight");
  matrix(*a.out_b, Shape{E}, "out-projection bias");
  GPEN_CHECK(a.in_w->contiguous() && a.out_w->contiguous(), "attention: projection weights must be contiguous");
}

// z [N, H, W, K] (argmax) or [N, H, W, C] (argmin), codebook [K, C], y [N, H, W, C], indices
// [N, H, W] i32.
inline void check_code_lookup_shapes(const CodeLookupParams& p, const TensorView& z, const TensorView& codebook,
                                     const TensorView& y, const TensorView& indices) {
  GPEN_CHECK(z.rank() == 4, "code_lookup: input must be NHWC, got " + z.shape.str());
  GPEN_CHECK(codebook.rank() == 2, "code_lookup: codebook must be [K, C], got " + codebook.shape.str());
  const int64_t N = z.dim(0), H = z.dim(1), W = z.dim(2), K = codebook.dim(0), C = codebook.dim(1);
  const bool argmax = p.mode == CodeLookup::argmax;
  GPEN_CHECK(z.dim(3) == (argmax ? K : C), std::string("code_lookup: ") + (argmax ? "logits " : "features ") +
                                               z.shape.str() + " must have " + std::to_string(argmax ? K : C) +
                                               " channels for the codebook " + codebook.shape.str());
  GPEN_CHECK(K > 0, "code_lookup: empty codebook");
  const Shape ys{N, H, W, C}, is{N, H, W};
  GPEN_CHECK(y.shape == ys, "code_lookup: output " + y.shape.str() + " must be " + ys.str());
  GPEN_CHECK(indices.dtype == DType::i32 && indices.shape == is && (indices.data || is.numel() == 0),
             "code_lookup: indices must be i32 " + is.str() + ", got " + dtype_name(indices.dtype) + " " +
                 indices.shape.str());
}

}  // namespace gpen::kernels
