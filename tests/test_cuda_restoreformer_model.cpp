// RestoreformerModel on the CUDA backend (emulated): the weights uploaded once, the whole
// RestoreFormer++ network (its encoder, the nearest-code lookup, the decoder's cross-attention at
// 16 x 16 and 32 x 32) on the device kernels in fp32, on the first face of the official fixture
// (tests/restoreformer_fixture.h, ch 32; one face: the emulator runs every thread of every block).
// The codes must be the official ones; the bound on the output is the CPU's against the official
// network, 1e-4 of its largest magnitude: the device kernels sum in other orders, which moves the
// output by float rounding only.
#include <doctest/doctest.h>

#include <string>

#include "engine/models/restoreformer.h"
#include "engine/runtime/cuda/backend_cuda.h"
#include "engine/runtime/device.h"
#include "tests/restoreformer_fixture.h"

using namespace gpen;

TEST_CASE("RestoreformerModel (RestoreFormer++) on the CUDA backend picks the official codes and matches the official output (emulated, fp32)") {
  DeviceOptions o;
  o.kind = DeviceKind::cuda;
  auto backend = cuda::make_cuda_backend(o);
  RestoreformerModel m(gpen_test::converted_restoreformer_fixture("rfpp"), *backend);
  const auto d = gpen_test::run_restoreformer_fixture(m, "rfpp", 1);
  const double scale = gpen_test::restoreformer_manifest()["variants"]["rfpp"]["max_abs"].get<double>();
  MESSAGE("rfpp on cuda: codes differing " << d.codes_differ << ", max abs diff " << d.worst << " of max |output| "
                                           << scale << ", relative " << d.worst / scale);
  CHECK(d.codes_differ == 0);
  CHECK(d.not_finite == 0);
  CHECK(d.worst <= 1e-4 * scale);
}
