#pragma once
// How far a whole network's output in fp16 / bf16 on the CUDA backend may lie from the CPU's fp32
// output on the same weights and input (test_cuda_accuracy's GPEN, test_cuda_gfpgan_model's
// GFPGAN; each test states its measured figures beside its loop).
// Max rel: 10 u (u = 2^-11 for fp16, 2^-8 for bf16), the bound test_cuda_backend.cpp uses (each of
// the ~20 layers rounds weights and activations to 11 / 8 significant bits; the errors add up like
// a random walk).
// PSNR of the 8-bit faces: a level is 2/255 = 7.8e-3 in model space, so fp16 errors stay well
// under one level and only values near a truncation boundary flip: mse ~ the fraction flipped,
// which grows linearly with the error. fp16 >= 55 dB leaves 5.5-5.7 dB (3.5x the mse) of margin
// over the measured figures and still lies above the bf16 figures, so an fp16 path that rounded
// like bf16 fails. bf16 >= 45 dB leaves 6.8-7.6 dB (errors of ~2.4x, the mse growing with their
// square once they exceed a level).
#include "engine/core/dtype.h"

namespace cuda_test {

struct SixteenBitBound {
  gpen::DType t;
  double min_psnr, max_rel;
};

inline constexpr SixteenBitBound kSixteenBitBounds[] = {{gpen::DType::f16, 55.0, 10.0 / 2048},
                                                        {gpen::DType::bf16, 45.0, 10.0 / 256}};

}  // namespace cuda_test
