// FullGenerator_SR on the CUDA backend (emulated by default): the noise inputs above in_size are
// filled on the host and uploaded before every run, so a 16 -> 32 model with non-zero noise
// weights must match the CPU backend run with the same seed, and repeat itself for that seed.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "engine/models/gpen_model.h"
#include "engine/photo/output_diff.h"
#include "engine/runtime/cuda/backend_cuda.h"
#include "engine/runtime/device.h"
#include "tests/cuda_emu/small_gpen.h"

using namespace gpen;

namespace {

GpenConfig sr_config(DType t) {
  GpenConfig c = cuda_test::small_gpen(t);
  c.size = 16;
  c.out_size = 32;
  return c;
}

std::vector<float> run(Backend& be, DType t, const std::vector<float>& in, int faces, uint64_t seed) {
  auto m = GpenModel::synthetic(sr_config(t), be, 9);
  m->prepare(faces);
  m->set_noise_seed(seed);
  std::vector<float> out(static_cast<size_t>(faces) * 32 * 32 * 3);
  m->run(in.data(), out.data());
  return out;
}

}  // namespace

TEST_CASE("CUDA FullGenerator_SR: the seeded noise reaches the device, fp32 and fp16 against the CPU") {
  const int faces = 2;
  std::vector<float> in(static_cast<size_t>(faces) * 16 * 16 * 3);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& v : in) v = u(rng);
  auto cpu = make_cpu_backend();
  const auto ref = run(*cpu, DType::f32, in, faces, 3);
  const auto other_seed = run(*cpu, DType::f32, in, faces, 4);
  DeviceOptions o;
  o.kind = DeviceKind::cuda;
  auto be = cuda::make_cuda_backend(o);
  const auto f32 = run(*be, DType::f32, in, faces, 3);
  const OutputDiff d = compare_outputs(f32.data(), ref.data(), faces, 32);
  const OutputDiff ds = compare_outputs(other_seed.data(), ref.data(), faces, 32);
  MESSAGE("fp32: max abs ", d.max_abs, "; another seed on the CPU: max abs ", ds.max_abs);
  CHECK(d.nonfinite == 0);
  CHECK(d.max_abs < 1e-4);  // the fp32 GPEN bound of test_cuda_backend (3e-7 relative measured)
  CHECK(ds.max_abs > 100 * d.max_abs);  // the noise matters: a wrong upload could not pass
  const auto f16 = run(*be, DType::f16, in, faces, 3);
  const OutputDiff h = compare_outputs(f16.data(), ref.data(), faces, 32);
  MESSAGE("fp16: max rel ", h.max_rel, ", PSNR 8-bit ", h.psnr_8bit);
  CHECK(h.max_rel < 10.0 / 2048);  // test_cuda_accuracy's fp16 bound
}
