// CUDA parse_labels against the CPU op: identical class maps and masks on random logits (strided
// view, ties, a NaN), and the refusals.
#include <doctest/doctest.h>

#include <limits>

#include "kernels/cpu/parse_labels.h"
#include "kernels/cuda/parse_labels.h"
#include "tests/cuda_emu/test_util.h"

using namespace gpen;
using cuda_test::DeviceBuffer;
using cuda_test::make_pair;

TEST_CASE("cuda parse_labels matches the CPU op") {
  const Shape s{2, 7, 9, 19};
  auto x = make_pair(s, DType::f32, 11, -2.0f, 2.0f, 23, 2);  // channels [2, 21) of 23
  // A tie (classes 4 and 9 of pixel 0 both the maximum) and a NaN (pixel 5, class 12).
  x.host[2 + 4] = x.host[2 + 9] = 5.0f;
  x.host[5 * 23 + 2 + 12] = std::numeric_limits<float>::quiet_NaN();
  x.dev.upload(x.host);
  const size_t pixels = 2 * 7 * 9;
  std::vector<uint8_t> lab(pixels), mask(pixels);
  cpu::parse_labels(x.hv, lab.data(), mask.data());
  DeviceBuffer dl(pixels), dm(pixels);
  cuda::parse_labels(x.dv, dl.as<uint8_t>(), dm.as<uint8_t>(), kParseDropClasses, nullptr);
  CHECK(dl.download<uint8_t>(pixels) == lab);
  CHECK(dm.download<uint8_t>(pixels) == mask);
  CHECK(lab[0] == 4);
  CHECK(lab[5] == 12);
  // The mask alone.
  DeviceBuffer dm2(pixels);
  cuda::parse_labels(x.dv, nullptr, dm2.as<uint8_t>(), kParseDropClasses, nullptr);
  CHECK(dm2.download<uint8_t>(pixels) == mask);
}

TEST_CASE("cuda parse_labels refuses more than 32 classes") {
  auto x = make_pair(Shape{1, 2, 2, 33}, DType::f32, 1);
  DeviceBuffer d(4);
  CHECK_THROWS_AS(cuda::parse_labels(x.dv, d.as<uint8_t>(), nullptr, kParseDropClasses, nullptr), Error);
}
