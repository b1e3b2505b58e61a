// The figures of `gpen bench --accuracy` on the CUDA backend (emulated by default, natively with
// GPEN_CUDA_TESTS_NATIVE): a small GPEN in fp16 and bf16 against the CPU backend's fp32 on the
// same synthetic weights and input, through compare_outputs (engine/photo/output_diff.h).
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "engine/runtime/device.h"
#include "engine/models/gpen_model.h"
#include "engine/photo/output_diff.h"
#include "engine/runtime/cuda/backend_cuda.h"
#include "tests/cuda_emu/sixteen_bit_bounds.h"
#include "tests/cuda_emu/small_gpen.h"

using namespace gpen;
using cuda_test::small_gpen;

namespace {

std::vector<float> run_once(Backend& be, DType precision, const std::vector<float>& in, int faces) {
  auto m = GpenModel::synthetic(small_gpen(precision), be, 9);
  m->prepare(faces);
  std::vector<float> out(in.size());
  m->run(in.data(), out.data());
  return out;
}

}  // namespace

TEST_CASE("CUDA accuracy: a small GPEN in fp16 and bf16 against the CPU's fp32 (raw and 8-bit)") {
  const int faces = 1, size = 32;
  std::vector<float> in(static_cast<size_t>(faces) * size * size * 3);
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& v : in) v = u(rng);
  auto cpu = make_cpu_backend();
  const std::vector<float> ref = run_once(*cpu, DType::f32, in, faces);

  DeviceOptions o;
  o.kind = DeviceKind::cuda;
  // Measured (emulator, this seed and input; 3072 values):
  //   fp16: max abs 1.9e-3, max rel 2.5e-3 (5 u, u = 2^-11), PSNR 60.5 dB (179 values 1 level off)
  //   bf16: max abs 1.3e-2, max rel 1.7e-2 (4 u, u = 2^-8),  PSNR 52.6 dB (1081 values off, max 2)
  // The bounds and why: tests/cuda_emu/sixteen_bit_bounds.h.
  for (const cuda_test::SixteenBitBound& c : cuda_test::kSixteenBitBounds) {
    const std::string name = dtype_name(c.t);
    CAPTURE(name);
    auto be = cuda::make_cuda_backend(o);
    const std::vector<float> out = run_once(*be, c.t, in, faces);
    const OutputDiff d = compare_outputs(out.data(), ref.data(), faces, size);
    MESSAGE(name << ": max abs " << d.max_abs << ", max rel " << d.max_rel << ", PSNR 8-bit " << d.psnr_8bit
                 << " dB (mse " << d.mse_8bit << ", max " << d.max_diff_8bit << " levels, " << d.differing_8bit
                 << " of " << d.values << " values differ)");
    CHECK(d.nonfinite == 0);
    CHECK(d.max_rel < c.max_rel);
    CHECK(d.psnr_8bit >= c.min_psnr);
  }
}
