// The CUDA host emulator (tests/cuda_emu/) against the semantics of the GPU: barriers, shared
// memory per block, warp shuffles and votes, WMMA, atomics, half/bf16 rounding, and the faults it
// must report. The probe kernels are plain CUDA, so with GPEN_CUDA_TESTS_NATIVE the same
// expectations are checked on a real GPU (the fault tests are emulator-only).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "tests/cuda_emu/fp16_bits.h"
#include "tests/cuda_emu/probes.h"
#include "tests/cuda_emu/test_util.h"

using cuda_test::cuda_ok;
using cuda_test::DeviceBuffer;

TEST_CASE("half conversion: every half round-trips and float ties round to even") {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = cuda_emu::half_bits_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    REQUIRE(cuda_emu::float_to_half_bits(f) == h);
  }
  // Midpoints between neighbouring finite halves round to the even one.
  for (uint32_t h = 0; h < 0x7bff; ++h) {
    const double lo = cuda_emu::half_bits_to_float(static_cast<uint16_t>(h));
    const double hi = cuda_emu::half_bits_to_float(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((lo + hi) / 2);  // exact in float
    REQUIRE(cuda_emu::float_to_half_bits(mid) == ((h & 1) ? h + 1 : h));
    REQUIRE(cuda_emu::float_to_half_bits(std::nextafter(mid, 0.0f)) == h);
    REQUIRE(cuda_emu::float_to_half_bits(std::nextafter(mid, 1e9f)) == h + 1);
  }
  CHECK(cuda_emu::float_to_half_bits(65504.0f) == 0x7bff);
  CHECK(cuda_emu::float_to_half_bits(65519.99f) == 0x7bff);
  CHECK(cuda_emu::float_to_half_bits(65520.0f) == 0x7c00);
  CHECK(cuda_emu::float_to_half_bits(-1e30f) == 0xfc00);
  CHECK(cuda_emu::float_to_half_bits(std::ldexp(1.0f, -25)) == 0x0000);  // tie with 0: even
  CHECK(cuda_emu::float_to_half_bits(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(cuda_emu::float_to_half_bits(-std::ldexp(1.0f, -26)) == 0x8000);
  CHECK(cuda_emu::float_to_half_bits(NAN) == 0x7fff);
}

#if defined(__F16C__)
TEST_CASE("half conversion matches the CPU's F16C instruction on random floats") {
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t bits = rng();
    const float f = cuda_emu::bits_float(bits);
    if (std::isnan(f)) continue;
    const uint16_t want = static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
    REQUIRE(cuda_emu::float_to_half_bits(f) == want);
  }
}
#endif

TEST_CASE("bf16 conversion rounds to nearest even") {
  CHECK(cuda_emu::float_to_bf16_bits(1.0f) == 0x3f80);
  CHECK(cuda_emu::float_to_bf16_bits(cuda_emu::bits_float(0x3f808000u)) == 0x3f80);  // tie, even below
  CHECK(cuda_emu::float_to_bf16_bits(cuda_emu::bits_float(0x3f818000u)) == 0x3f82);  // tie, even above
  CHECK(cuda_emu::float_to_bf16_bits(cuda_emu::bits_float(0x3f808001u)) == 0x3f81);
  CHECK(cuda_emu::float_to_bf16_bits(3.4e38f) == 0x7f80);  // past the largest bf16: inf
  CHECK(cuda_emu::float_to_bf16_bits(NAN) == 0x7fff);
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = cuda_emu::bf16_bits_to_float(static_cast<uint16_t>(b));
    if (!std::isnan(f)) REQUIRE(cuda_emu::float_to_bf16_bits(f) == b);
  }
}

#if defined(GPEN_CUDA_EMU)
TEST_CASE("emulated __half arithmetic rounds once per operation") {
  const __half a = 1.0f, b = std::ldexp(1.0f, -11);  // b is half an ulp of 1
  CHECK(static_cast<float>(a + b) == 1.0f);           // tie: stays at the even 1.0
  CHECK(static_cast<float>(a + b + b) == 1.0f);
  CHECK(static_cast<float>(a + (b + b)) == 1.0f + std::ldexp(1.0f, -10));
  const __nv_bfloat16 c = 3.0f;
  CHECK(static_cast<float>(c * c) == 9.0f);
  CHECK(static_cast<float>(-c) == -3.0f);
}
#endif

TEST_CASE("__syncthreads orders shared-memory writes before reads") {
  for (int threads : {128, 100, 1024}) {
    const int blocks = 3;
    DeviceBuffer out(blocks * threads * sizeof(int));
    cuda_ok(cuda_probes::barrier_exchange(blocks, threads, out.as<int>()), "barrier_exchange");
    const auto got = out.download<int>(blocks * threads);
    for (int b = 0; b < blocks; ++b)
      for (int t = 0; t < threads; ++t) REQUIRE(got[b * threads + t] == 1000 * b + (t + 1) % threads);
  }
}

TEST_CASE("shared memory is private to a block, block reduction through shuffles") {
  auto run = [] {
    const int blocks = 6, threads = 256;
    DeviceBuffer out(blocks * sizeof(long long));
    cuda_ok(cuda_probes::block_reduce(blocks, threads, out.as<long long>()), "block_reduce");
    const auto got = out.download<long long>(blocks);
    for (int b = 0; b < blocks; ++b) CHECK(got[b] == static_cast<long long>(b + 1) * threads * (threads + 1) / 2);
  };
  run();
#if defined(GPEN_CUDA_EMU)
  SUBCASE("blocks spread over several OS threads") {
    cuda_emu::set_worker_threads(3);
    run();
    cuda_emu::set_worker_threads(1);
  }
#endif
}

TEST_CASE("warp shuffles follow CUDA's lane and width rules") {
  DeviceBuffer out(160 * sizeof(int));
  cuda_ok(cuda_probes::shuffles(out.as<int>()), "shuffles");
  const auto got = out.download<int>(160);
  for (int lane = 0; lane < 32; ++lane) {
    CAPTURE(lane);
    CHECK(got[lane] == 5);
    const int b8 = lane & ~7, b16 = lane & ~15, b4 = lane & ~3;
    CHECK(got[32 + lane] == (lane - b8 >= 3 ? lane - 3 : lane));
    CHECK(got[64 + lane] == (lane - b16 + 2 < 16 ? lane + 2 : lane));
    CHECK(got[96 + lane] == (lane ^ 9));
    // Reading a later segment returns the caller's own value; an earlier one is allowed.
    const int x = lane ^ 4;
    CHECK(got[128 + lane] == (x > b4 + 3 ? lane : x));
  }
}

TEST_CASE("warp votes and __syncthreads_count") {
  DeviceBuffer out(5 * sizeof(unsigned));
  cuda_ok(cuda_probes::votes(out.as<unsigned>()), "votes");
  const auto got = out.download<unsigned>(5);
  unsigned ballot = 0;
  for (int lane = 0; lane < 32; lane += 3) ballot |= 1u << lane;
  CHECK(got[0] == ballot);
  CHECK(got[1] == 1);
  CHECK(got[2] == 0);
  CHECK(got[3] == 1);
  CHECK(got[4] == 20);  // t % 5 == 0 for t in 0..95
}

namespace {

template <class Encode>
void check_wmma_tile(gpen::DType dt, Encode encode_bits,
                     cudaError_t (*probe)(const void*, const void*, const float*, float*)) {
  // a row-major, b given transposed (column-major), exact products accumulated: compare with a
  // double-precision GEMM of the rounded inputs; only float accumulation error remains.
  auto a = cuda_test::random_values(256, 11), bt = cuda_test::random_values(256, 12);
  const auto c = cuda_test::random_values(256, 13, -4.0f, 4.0f);
  for (float& v : a) v = cuda_test::quantize(v, dt);
  for (float& v : bt) v = cuda_test::quantize(v, dt);
  std::vector<uint16_t> ab(256), bb(256);
  for (int i = 0; i < 256; ++i) ab[i] = encode_bits(a[i]), bb[i] = encode_bits(bt[i]);
  DeviceBuffer da(512), db(512), dc(1024), dd(1024);
  da.upload(ab);
  db.upload(bb);
  dc.upload(c);
  cuda_ok(probe(da.get(), db.get(), dc.as<float>(), dd.as<float>()), "wmma tile");
  const auto d = dd.download<float>(256);
  std::vector<float> want(256);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      double s = c[i * 16 + j];
      for (int k = 0; k < 16; ++k) s += static_cast<double>(a[i * 16 + k]) * bt[j * 16 + k];
      want[i * 16 + j] = static_cast<float>(s);
    }
  cuda_test::check_close(d, want, {1e-5, 1e-5}, std::string("wmma ") + gpen::dtype_name(dt));
}

cudaError_t probe_half(const void* a, const void* b, const float* c, float* d) {
  return cuda_probes::wmma_tile_half(static_cast<const __half*>(a), static_cast<const __half*>(b), c, d);
}
cudaError_t probe_bf16(const void* a, const void* b, const float* c, float* d) {
  return cuda_probes::wmma_tile_bf16(static_cast<const __nv_bfloat16*>(a), static_cast<const __nv_bfloat16*>(b), c, d);
}

}  // namespace

TEST_CASE("WMMA 16x16x16 matches a naive GEMM (half and bf16)") {
  check_wmma_tile(gpen::DType::f16, cuda_emu::float_to_half_bits, probe_half);
  check_wmma_tile(gpen::DType::bf16, cuda_emu::float_to_bf16_bits, probe_bf16);
}

TEST_CASE("atomics across the grid") {
  auto run = [] {
    DeviceBuffer counter(sizeof(int)), maximum(sizeof(int));
    cuda_ok(cudaMemset(counter.get(), 0, sizeof(int)), "memset");
    cuda_ok(cudaMemset(maximum.get(), 0, sizeof(int)), "memset");
    cuda_ok(cuda_probes::atomics(7, 64, counter.as<int>(), maximum.as<int>()), "atomics");
    CHECK(counter.download<int>(1)[0] == 7 * 64);
    CHECK(maximum.download<int>(1)[0] == 7 * 64 - 1);
  };
  run();
#if defined(GPEN_CUDA_EMU)
  cuda_emu::set_worker_threads(2);
  run();
  cuda_emu::set_worker_threads(1);
#endif
}

TEST_CASE("a launch with too many threads per block is a configuration error, not a fault") {
  CHECK(cuda_probes::fault_bad_configuration() == cudaErrorInvalidConfiguration);
  CHECK(cudaGetLastError() == cudaSuccess);  // reading the error cleared it
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
}

#if defined(GPEN_CUDA_EMU)
namespace {

// Runs a faulting probe and checks the sticky error and the message, then clears the fault.
template <class F>
void expect_fault(F&& probe, const std::string& message_part) {
  cuda_emu::clear_fault();
  CHECK(probe() == cudaErrorLaunchFailure);
  CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure);  // sticky like a device fault
  const std::string msg = cuda_emu::last_fault();
  INFO("fault message: " << msg);
  CHECK(msg.find(message_part) != std::string::npos);
  cuda_emu::clear_fault();
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
}

}  // namespace

TEST_CASE("emulator faults: divergent barrier, mismatched warp masks, misaligned WMMA, host pointers") {
  DeviceBuffer out(1024);
  expect_fault([&] { return cuda_probes::fault_divergent_syncthreads(out.as<int>()); }, "divergent __syncthreads");
  // Lanes 0-15 complete a round of their own; lane 16 then reads lane 0, which never joined its round.
  // Under GPEN_CUDA_EMU_CHECK=sync the mask naming lanes that exited is reported first; under a
  // shuffled schedule (GPEN_CUDA_EMU_SEED) a lane of the other mask may arrive first.
  const char* checks = std::getenv("GPEN_CUDA_EMU_CHECK");
  const char* seed = std::getenv("GPEN_CUDA_EMU_SEED");
  const bool sync = checks && (std::string(checks).find("sync") != std::string::npos ||
                               std::string(checks).find("all") != std::string::npos);
  if (sync || (seed && *seed))
    expect_fault([&] { return cuda_probes::fault_shuffle_mask_mismatch(out.as<int>()); }, "__shfl_sync");
  else
    expect_fault([&] { return cuda_probes::fault_shuffle_mask_mismatch(out.as<int>()); }, "which did not take part");
  DeviceBuffer a(1024);
  expect_fault([&] { return cuda_probes::fault_wmma_misaligned(a.as<__half>(), out.as<float>()); }, "32-byte aligned");
  std::vector<int> host(64);
  expect_fault([&] { return cuda_probes::barrier_exchange(1, 64, host.data()); }, "not device memory");
}

TEST_CASE("emulated runtime checks copies against device allocations") {
  DeviceBuffer d(64);
  std::vector<char> h(64), h2(64);
  CHECK(cudaMemcpy(d.get(), h.data(), 64, cudaMemcpyHostToDevice) == cudaSuccess);
  CHECK(cudaMemcpy(h2.data(), h.data(), 64, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
  CHECK(cudaMemcpy(h.data(), d.get(), 65, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue);
  CHECK(cudaGetLastError() == cudaErrorInvalidValue);
  CHECK(cudaGetLastError() == cudaSuccess);
  size_t free_bytes = 0, total = 0;
  CHECK(cudaMemGetInfo(&free_bytes, &total) == cudaSuccess);
  CHECK(total - free_bytes >= 64);
}
#endif
