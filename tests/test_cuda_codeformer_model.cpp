// CodeformerModel on the CUDA backend (emulated): the weights uploaded once, the whole network
// (VQGAN's encoder, the transformer and its code logits, the codebook gather with AdaIN, the
// generator fused with the encoder's features at w 0.5) on the device kernels in fp32, on the
// first face of the official fixture (tests/codeformer_fixture.h; one face: the emulator runs
// every thread of every block). The codes must be the official ones; the bound on the output is
// the CPU's against the official network, 1e-4 of its largest magnitude: the device kernels sum
// in other orders, which moves the output by float rounding only.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/models/codeformer.h"
#include "engine/runtime/cuda/backend_cuda.h"
#include "engine/runtime/device.h"
#include "tests/codeformer_fixture.h"

using namespace gpen;

TEST_CASE("CodeformerModel on the CUDA backend picks the official codes and matches the official output at w 0.5 (emulated, fp32)") {
  DeviceOptions o;
  o.kind = DeviceKind::cuda;
  auto backend = cuda::make_cuda_backend(o);
  CodeformerModel m(gpen_test::converted_codeformer_fixture(), *backend);
  const int64_t N = 1;
  const std::vector<float> x = gpen_test::codeformer_fixture_input(N);
  std::vector<float> y(static_cast<size_t>(N * 512 * 512 * 3));
  std::vector<int32_t> idx(static_cast<size_t>(N * 256));
  m.run(x.data(), static_cast<int>(N), 0.5f, y.data(), idx.data());
  const auto d = gpen_test::compare_with_official(y, idx, N, gpen_test::codeformer_dir() + "indices.npy",
                                                  gpen_test::codeformer_dir() + "output_w0.5.npy");
  const double scale = gpen_test::codeformer_manifest()["outputs"]["0.5"]["max_abs"].get<double>();
  MESSAGE("w 0.5 on cuda: codes differing " << d.codes_differ << ", max abs diff " << d.worst << " of max |output| "
                                            << scale << ", relative " << d.worst / scale);
  CHECK(d.codes_differ == 0);
  CHECK(d.not_finite == 0);
  CHECK(d.worst <= 1e-4 * scale);
}
