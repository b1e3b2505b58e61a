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
  // Max rel: 10 u, the bound test_cuda_backend.cpp uses (each of the ~20 layers rounds weights and
  // activations to 11 / 8 significant bits; the errors add up like a random walk).
  // PSNR: an 8-bit level is 2/255 = 7.8e-3 in model space, so fp16 errors stay well under one
  // level and only values near a truncation boundary flip: mse ~ the fraction flipped, which grows
  // linearly with the error. fp16 >= 55 dB leaves 5.5 dB (3.5x the mse) of margin and still lies
  // above the bf16 figure, so an fp16 path that rounded like bf16 (52.6 dB here) fails.
  // bf16 >= 45 dB leaves 7.6 dB (5.8x the mse: errors of ~2.4x, the mse growing with their square
  // once they exceed a level).
  struct Case {
    DType t;
    double min_psnr, max_rel;
  } cases[] = {{DType::f16, 55.0, 10.0 / 2048}, {DType::bf16, 45.0, 10.0 / 256}};
  for (const Case& c : cases) {
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
