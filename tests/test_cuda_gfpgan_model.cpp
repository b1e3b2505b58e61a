// GfpganModel on the CUDA backend (emulated): the weights uploaded once, the whole network on the
// device kernels in fp32, on the official fixtures of tests/reference/make_gfpgan_fixtures.py
// (both layouts: different_w with SFT on half the channels, and one shared style code with SFT on
// all of them). The bound is the CPU's against the official network (1e-4): the device kernels
// sum in other orders, which moves the output by float rounding only. Then fp16 and bf16 (weights
// converted at upload, activations in 16 bits) against the CPU's fp32, with GPEN's bounds.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "engine/photo/output_diff.h"
#include "engine/runtime/cuda/backend_cuda.h"
#include "engine/runtime/device.h"
#include "tests/cuda_emu/sixteen_bit_bounds.h"
#include "tests/cuda_emu/test_util.h"
#include "tests/gfpgan_fixture.h"

using namespace gpen;

namespace {

std::unique_ptr<Backend> emulated_cuda() {
  DeviceOptions o;
  o.kind = DeviceKind::cuda;
  return cuda::make_cuda_backend(o);
}

}  // namespace

TEST_CASE("GfpganModel on the CUDA backend matches the official network (emulated, fp32)") {
  for (const std::string cfg : {"s64", "s32"}) {
    CAPTURE(cfg);
    auto backend = emulated_cuda();
    const auto r = gpen_test::run_gfpgan_fixture(cfg, *backend);
    MESSAGE(cfg << " on cuda: max abs diff output " << r.output << ", style code " << r.style);
    CHECK(r.style <= 1e-4);
    CHECK(r.output <= 1e-4);
  }
}

namespace {

// GfpganModel in `precision` on `backend` on fixture s32's inputs (both faces in one batch): the
// output and the style code, and the bytes of the weights it holds.
struct GfpganRun {
  std::vector<float> output, style;
  size_t weights_bytes = 0;
};

GfpganRun run_s32(Backend& backend, std::optional<DType> precision) {
  const std::string dir = gpen_test::gfpgan_dir() + "s32/";
  const npy::Array in = npy::load(dir + "input.npy");
  const int64_t N = in.shape[0], S = in.shape[2];
  GfpganModel m(gpen_test::convert_gfpgan_fixture("s32"), backend, precision);
  const std::vector<float> x = gpen_test::nchw_to_nhwc(in.data<float>(), N, 3, S, S);
  GfpganRun r;
  r.output.resize(static_cast<size_t>(N * S * S * 3));
  const GfpganNetConfig& c = m.config();
  r.style.resize(static_cast<size_t>(N * (c.different_w ? c.num_latent() : 1) * c.num_style_feat));
  m.run(x.data(), static_cast<int>(N), r.output.data(), r.style.data());
  r.weights_bytes = m.weights_bytes();
  return r;
}

}  // namespace

TEST_CASE("GfpganModel on the CUDA backend in fp16 and bf16 against the CPU's fp32 (emulated)") {
  auto cpu = make_cpu_backend();
  const GfpganRun ref = run_s32(*cpu, std::nullopt);
  const int faces = 2, size = 32;
  REQUIRE(ref.output.size() == static_cast<size_t>(faces) * size * size * 3);
  const GfpganRun f32 = run_s32(*emulated_cuda(), DType::f32);
  // The bounds and why: tests/cuda_emu/sixteen_bit_bounds.h. Measured (emulator, both faces of
  // s32, 6144 values):
  //   fp16: max abs 2.9e-3, max rel 1.0e-3 (2 u), PSNR 60.7 dB (342 values 1 level off)
  //   bf16: max abs 2.1e-2, max rel 7.2e-3 (1.8 u), PSNR 51.8 dB (2362 values off, max 3)
  for (const cuda_test::SixteenBitBound& c : cuda_test::kSixteenBitBounds) {
    const std::string name = dtype_name(c.t);
    CAPTURE(name);
    const GfpganRun r = run_s32(*emulated_cuda(), c.t);
    const OutputDiff d = compare_outputs(r.output.data(), ref.output.data(), faces, size);
    double style_abs = 0, style_max = 0;
    for (size_t i = 0; i < ref.style.size(); ++i) {
      style_abs = std::max(style_abs, static_cast<double>(std::abs(r.style[i] - ref.style[i])));
      style_max = std::max(style_max, static_cast<double>(std::abs(ref.style[i])));
    }
    MESSAGE(name << ": max abs " << d.max_abs << ", max rel " << d.max_rel << ", PSNR 8-bit " << d.psnr_8bit
                 << " dB (max " << d.max_diff_8bit << " levels, " << d.differing_8bit << " of " << d.values
                 << " values differ); style code max rel " << style_abs / style_max << "; weights " << r.weights_bytes
                 << " bytes (fp32 " << f32.weights_bytes << ")");
    CHECK(d.nonfinite == 0);
    CHECK(d.max_rel < c.max_rel);
    CHECK(d.psnr_8bit >= c.min_psnr);
    CHECK(style_abs / style_max < c.max_rel);
    CHECK(r.weights_bytes * 2 == f32.weights_bytes);  // every tensor of the file is bound, in 16 bits
  }
}
