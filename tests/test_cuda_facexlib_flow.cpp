// The facexlib photo flow (GFPGANer.enhance's, engine/photo/facexlib_flow.h) with --device cuda:
// the network on the CUDA backend (emulated) in fp32, detection, alignment and paste on the host,
// against the same flow all on the CPU. The model is a small random GFPGANv1Clean at out_size 512
// (narrow 1/8, channel multiplier 1: converter/synthetic_gfpgan.h), the photo the shared
// kids_1024x768.jpg with its centre face. The device kernels sum in other orders than the CPU's
// (float rounding only, ~1e-5 of the output: test_cuda_gfpgan_model), which moves a few 8-bit
// values by one level: the composite and the restored face must be within 60 dB PSNR of the CPU's
// (one level off everywhere would be 48 dB). With --precision fp16 the flow opens the network in 16
// bits. Also: half precision refused on the CPU for these models, by name.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "converter/convert.h"
#include "converter/synthetic_gfpgan.h"
#include "engine/core/error.h"
#include "engine/photo/image.h"
#include "engine/photo/restorer.h"
#include "engine/runtime/cuda/backend_cuda.h"
#include "tests/facexlib_flow_fixture.h"
#include "tests/test_paths.h"

using namespace gpen;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() {
  const fs::path d = gpen_test::scratch_path("cuda_facexlib_flow");
  fs::create_directories(d);
  return d;
}

struct RemoveTempDir {
  ~RemoveTempDir() {
    std::error_code ec;
    fs::remove_all(gpen_test::scratch_path("cuda_facexlib_flow"), ec);
  }
} remove_temp_dir;

std::string small_gfpgan() {
  conv::GfpganConfig gc;
  gc.out_size = 512;
  gc.channel_multiplier = 1;
  gc.narrow = 0.125;
  const std::string gpw = (temp_dir() / "gfpgan512_small.gpw").string();
  conv::convert(conv::SyntheticGfpganCheckpoint(gc, 1), gpw);
  return gpw;
}

}  // namespace

TEST_CASE("GFPGAN's photo flow with --device cuda: the network on the device, the composite as the CPU flow's (emulated)") {
  if (!fs::exists(gpen_test::shared_dir() + "/models/retinaface-mobilenet0.25.pth")) {
    MESSAGE("skipped: the shared detector is missing");
    return;
  }
  RestoreConfig c;
  c.model = small_gfpgan();
  c.detector = gpen_test::facexlib_detector_gpw(temp_dir());
  c.only_center_face = true;
  c.threads = 1;
  c.device = DeviceKind::cpu;
  auto cpu = Restorer::open(c);
  c.device = DeviceKind::cuda;
  auto dev = Restorer::open(c, &cuda::cuda_provider());
  CHECK(dev->plan().device != cpu->plan().device);
  CHECK(dev->plan().precision == "fp32");
  CHECK(dev->memory_json()["device"] == dev->plan().device);

  const Image photo = read_image(gpen_test::shared_dir() + "/images/kids_1024x768.jpg");
  const RestoreResult want = cpu->restore(photo);
  const RestoreResult got = dev->restore(photo);
  REQUIRE(want.restored == 1);
  REQUIRE(got.restored == 1);
  int max_diff = 0;
  const double composite = gpen_test::image_psnr(got.image, want.image, &max_diff);
  MESSAGE("composite: PSNR " << composite << " dB against the CPU flow's, max diff " << max_diff << " levels");
  CHECK(composite >= 60.0);
  REQUIRE(got.restored_faces.size() == want.restored_faces.size());
  for (size_t i = 0; i < got.restored_faces.size(); ++i) {
    const double face = gpen_test::image_psnr(got.restored_faces[i], want.restored_faces[i], &max_diff);
    MESSAGE("restored face " << i << ": PSNR " << face << " dB, max diff " << max_diff << " levels");
    CHECK(face >= 60.0);
  }

  // --precision fp16: the network opened in 16 bits on the device (its weights half fp32's). Not
  // run here: the emulator takes minutes over a 512 network's tensor-core convs in 16 bits; the
  // numbers are test_cuda_gfpgan_model's (fp16 against the CPU's fp32).
  c.precision = "fp16";
  auto half = Restorer::open(c, &cuda::cuda_provider());
  CHECK(half->plan().precision == "fp16");
  CHECK(half->memory_json()["precision"] == "fp16");
  CHECK(half->memory_json()["weights_bytes"].get<size_t>() * 2 == dev->memory_json()["weights_bytes"].get<size_t>());
}

TEST_CASE("the facexlib flows take half precision on the device only, naming the model") {
  RestoreConfig c;
  c.model = "m.gpw";
  c.detector = "d.gpw";
  c.device = DeviceKind::cuda;
  CHECK_NOTHROW(check_config(c, FaceFlow::gfpgan));
  c.precision = "fp32";
  CHECK_NOTHROW(check_config(c, FaceFlow::codeformer));
  c.precision = "fp16";
  CHECK_NOTHROW(check_config(c, FaceFlow::gfpgan));
  c.precision = "bf16";
  CHECK_NOTHROW(check_config(c, FaceFlow::restoreformer));
  // These flows keep the network on the CPU unless --device cuda is given (auto included).
  for (DeviceKind d : {DeviceKind::cpu, DeviceKind::automatic}) {
    c.device = d;
    c.precision = "fp16";
    CHECK_THROWS_WITH_AS(check_config(c, FaceFlow::gfpgan),
                         "--precision fp16: the CPU backend runs GFPGAN in fp32 only (use --device cuda)", Error);
    c.precision = "bf16";
    CHECK_THROWS_WITH_AS(check_config(c, FaceFlow::codeformer),
                         "--precision bf16: the CPU backend runs CodeFormer in fp32 only (use --device cuda)", Error);
    c.precision = "fp32";
    CHECK_NOTHROW(check_config(c, FaceFlow::restoreformer));
  }
  c.precision = "fp12";
  CHECK_THROWS_AS(check_config(c, FaceFlow::gfpgan), Error);
}
