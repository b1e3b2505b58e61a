// kernels/cpu/core_distance.h: the probe of how far apart the CPU threads run, its overrides, and
// that what it decides (upfirdn2d's streaming stores when far) changes no bit of a result.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <vector>

#include "blur_fixture.h"
#include "kernels/cpu/core_distance.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/upfirdn2d_act.h"

using namespace gpen;

TEST_CASE("core distance: the probe measures with two threads, reads near with one, and obeys the overrides") {
  cpu::set_num_threads(2);
  for (int i = 0; i < 3; ++i) {
    cpu::probe_cores(cpu::FarMode::measure);
    const double ns = cpu::last_core_round_trip_ns();
    MESSAGE("round trip " << ns << " ns");
    // 0 where the two threads had to share one CPU (the probe gives up: read near).
    CHECK(ns >= 0.0);
    CHECK(ns < 1e6);
    CHECK(cpu::cores_far() == (ns > cpu::kFarRoundTripNs));
  }
  cpu::set_num_threads(1);
  cpu::probe_cores();
  CHECK_FALSE(cpu::cores_far());
  CHECK(cpu::last_core_round_trip_ns() == 0.0);
  cpu::set_num_threads(2);
  cpu::probe_cores(cpu::FarMode::always);
  CHECK(cpu::cores_far());
  cpu::probe_cores(cpu::FarMode::never);
  CHECK_FALSE(cpu::cores_far());
  cpu::set_num_threads(0);
}

TEST_CASE("core distance: far apart, the blurs stream their outputs, with the bits of plain stores") {
  // A GPEN blur with its fused epilogue: 64x64x32 outputs (512 KiB, from kFarStreamMinBytes but
  // under the size that always streams), with and without the epilogue, and with one thread (which
  // never streams for distance).
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t N = 1, H = 65, W = 65, C = 32;
  const UpFirDn2dParams p = gpen_blur_params();
  const Shape xs{N, H, W, C}, ys{N, H - 1, W - 1, C};
  std::vector<float> x(static_cast<size_t>(xs.numel())), sc(static_cast<size_t>(N * C)), b(static_cast<size_t>(C));
  for (auto* v : {&x, &sc, &b})
    for (float& e : *v) e = nd(rng);
  const TensorView xv = make_view(x.data(), DType::f32, xs), sv = make_view(sc.data(), DType::f32, Shape{N, C}),
                   bv = make_view(b.data(), DType::f32, Shape{C});
  for (bool epilogue : {false, true})
    for (int threads : {2, 1}) {
      CAPTURE(epilogue);
      CAPTURE(threads);
      UpFirDn2dParams q = p;
      q.has_out_scale = q.has_bias = epilogue;
      q.act = epilogue ? Activation::scaled_leaky() : Activation::none();
      cpu::set_num_threads(threads);
      std::vector<unsigned char> ws(cpu::upfirdn2d_workspace_bytes(q, xs, ys, 0));
      std::vector<float> got[2];
      for (int far : {0, 1}) {
        // 64-byte aligned rows, so the streaming path takes whole vectors.
        got[far].assign(static_cast<size_t>(ys.numel() + 16), -7.0f);
        float* y = got[far].data();
        while (reinterpret_cast<uintptr_t>(y) % 64) ++y;
        cpu::probe_cores(far ? cpu::FarMode::always : cpu::FarMode::never);
        REQUIRE(cpu::cores_far() == (far == 1));
        cpu::upfirdn2d_act(q, xv, epilogue ? &sv : nullptr, epilogue ? &bv : nullptr, make_view(y, DType::f32, ys),
                           ws.data());
        got[far].erase(got[far].begin(), got[far].begin() + (y - got[far].data()));
        got[far].resize(static_cast<size_t>(ys.numel()));
      }
      CHECK(got[0][0] != -7.0f);
      CHECK(std::memcmp(got[0].data(), got[1].data(), got[0].size() * sizeof(float)) == 0);
    }
  cpu::set_num_threads(0);
}
