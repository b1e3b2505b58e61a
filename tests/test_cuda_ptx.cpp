// The PTX layer (kernels/cuda/ptx.cuh) through its probe kernels (tests/cuda_emu/probes_ptx.cu):
// mma.sync m16n8k16 (f16, bf16), ldmatrix x1/x2/x4 with and without .trans, cp.async with
// zero fill and wait_group. Every expected value is exact (small integers, or bytes), so the
// emulator and, in a native run (the GPU bundle), the hardware must match it bit for bit: the
// first GPU run confirms that the emulated fragment layouts are the hardware's.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "tests/cuda_emu/fp16_bits.h"
#include "tests/cuda_emu/probes_ptx.h"
#include "tests/cuda_emu/test_util.h"

using cuda_test::cuda_ok;
using cuda_test::DeviceBuffer;

TEST_CASE("ptx: mma.sync m16n8k16 fragments follow the ISA layout (f16 and bf16)") {
  // Distinct small integers per (row, k) and (k, col): a lane or register in the wrong place
  // changes the sums. Every product and sum is exact in f32.
  std::vector<float> a(16 * 16), b(16 * 8), c(16 * 8);
  for (int r = 0; r < 16; ++r)
    for (int k = 0; k < 16; ++k) a[r * 16 + k] = static_cast<float>((r * 3 + k * 5 + r * k) % 7 - 3);
  for (int k = 0; k < 16; ++k)
    for (int n = 0; n < 8; ++n) b[k * 8 + n] = static_cast<float>((k * 2 + n * 7 + k * n) % 9 - 4);
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 8; ++n) c[r * 8 + n] = static_cast<float>(100 * r + n);
  std::vector<float> want(16 * 8);
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 8; ++n) {
      float s = c[r * 8 + n];
      for (int k = 0; k < 16; ++k) s += a[r * 16 + k] * b[k * 8 + n];
      want[r * 8 + n] = s;
    }
  for (bool half : {true, false}) {
    CAPTURE(half);
    DeviceBuffer da(a.size() * 4), db(b.size() * 4), dc(c.size() * 4), dd(want.size() * 4);
    da.upload(a), db.upload(b), dc.upload(c);
    cuda_ok(cuda_probes::mma_layout(half, da.as<float>(), db.as<float>(), dc.as<float>(), dd.as<float>()), "mma");
    const std::vector<float> got = dd.download<float>(want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      CAPTURE(i);
      REQUIRE(got[i] == want[i]);
    }
  }
}

TEST_CASE("ptx: ldmatrix x1 / x2 / x4, with and without .trans, read the rows the lanes address") {
  auto row_of = [](int lane) { return (7 * lane) % 32; };  // storage row lane passes
  auto word = [](int s, int col) { return static_cast<uint32_t>(s * 8 + col); };
  for (int n : {1, 2, 4})
    for (bool trans : {false, true}) {
      CAPTURE(n);
      CAPTURE(trans);
      DeviceBuffer out(32 * 4 * 4);
      cuda_ok(cuda_probes::ldmatrix_rows(n, trans, out.as<uint32_t>()), "ldmatrix");
      const std::vector<uint32_t> got = out.download<uint32_t>(32 * 4);
      for (int l = 0; l < 32; ++l)
        for (int i = 0; i < 4; ++i) {
          uint32_t want = 0;
          if (i < n) {
            const int r = l / 4, w = l % 4;
            if (!trans)
              want = word(row_of(8 * i + r), 2 * w) | word(row_of(8 * i + r), 2 * w + 1) << 16;
            else
              want = word(row_of(8 * i + 2 * w), r) | word(row_of(8 * i + 2 * w + 1), r) << 16;
          }
          CAPTURE(l);
          CAPTURE(i);
          REQUIRE(got[l * 4 + i] == want);
        }
    }
}

TEST_CASE("ptx: ldmatrix-fed mma.sync computes a 16 x 16 x 16 GEMM") {
  std::vector<uint16_t> a(256), b(256);
  std::vector<float> fa(256), fb(256);
  for (int i = 0; i < 256; ++i) {
    fa[i] = static_cast<float>((i * 7 + i / 16) % 11 - 5);
    fb[i] = static_cast<float>((i * 5 + 3 * (i / 16)) % 13 - 6) * 0.5f;
    a[i] = cuda_emu::float_to_half_bits(fa[i]);
    b[i] = cuda_emu::float_to_half_bits(fb[i]);
  }
  DeviceBuffer da(512), db(512), dd(256 * 4);
  da.upload(a), db.upload(b);
  cuda_ok(cuda_probes::mma_ldmatrix_gemm(da.as<__half>(), db.as<__half>(), dd.as<float>()), "gemm");
  const std::vector<float> got = dd.download<float>(256);
  for (int r = 0; r < 16; ++r)
    for (int n = 0; n < 16; ++n) {
      float s = 0.0f;
      for (int k = 0; k < 16; ++k) s += fa[r * 16 + k] * fb[k * 16 + n];
      CAPTURE(r);
      CAPTURE(n);
      REQUIRE(got[r * 16 + n] == s);
    }
}

TEST_CASE("ptx: cp.async copies src-size bytes, zero-fills the rest, lands by wait_group") {
  std::vector<unsigned char> src(2048);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 37 + 11);
  DeviceBuffer dsrc(src.size()), out(2048);
  dsrc.upload(src);
  cuda_ok(cuda_probes::cp_async_groups(dsrc.as<unsigned char>(), out.as<unsigned char>()), "cp.async");
  const std::vector<unsigned char> got = out.download<unsigned char>(2048);
  for (int t = 0; t < 64; ++t)
    for (int j = 0; j < 16; ++j) {
      CAPTURE(t);
      CAPTURE(j);
      REQUIRE(got[16 * t + j] == (j < t % 17 ? src[16 * t + j] : 0));
      REQUIRE(got[1024 + 16 * t + j] == src[1024 + 16 * (63 - t) + j]);
    }
}
