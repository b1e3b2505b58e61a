#pragma once
// How far one run of a generator is from a reference run on the same input: the raw output
// (model space, NHWC RGB in [-1, 1]) and the 8-bit faces made from it as the pipeline makes them
// (model_to_face). Used by `gpen bench --accuracy` (CUDA fp16/bf16/fp32 against the CPU's fp32)
// and the accuracy tests.
#include <cstddef>

namespace gpen {

struct OutputDiff {
  size_t values = 0;     // floats compared
  size_t nonfinite = 0;  // NaN / inf in the output under test (the reference must be finite)
  double max_abs = 0;    // max |a - b| over the finite values
  double max_rel = 0;    // max |a - b| / max |b|: one scale-free number per comparison
  // 8-bit faces (model_to_face of each face of both outputs): squared error summed over every
  // face, pixel and channel / their count; PSNR = 10 log10(255^2 / mse), +inf when mse is 0.
  // Both are NaN when the output under test holds non-finite values (no faces are made of it).
  double mse_8bit = 0;
  double psnr_8bit = 0;
  int max_diff_8bit = 0;        // largest |difference| of one 8-bit channel value
  size_t differing_8bit = 0;    // 8-bit channel values that differ at all
};

// a: the output under test, b: the reference; both `faces` x size x size x 3 floats. Throws
// gpen::Error when b holds a non-finite value or faces / size are not positive.
OutputDiff compare_outputs(const float* a, const float* b, int faces, int size);

}  // namespace gpen
