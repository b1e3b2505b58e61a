// The video pipeline with its restoring step on the CUDA backend (emulated by default,
// tests/cuda_emu; natively with GPEN_CUDA_TESTS_NATIVE): the first frames of a clip with faces
// (tests/video/make_clips.py) decoded, restored by a Restorer on CUDA in fp32 and written
// losslessly, against the same frames restored on the CPU. The `gpen` binary reaches only the
// native CUDA build, so the test opens the Restorer on the provider it links, and hands frames over
// as `gpen video` does (apps/video_restore.cpp).
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/photo/restorer.h"
#include "engine/runtime/cuda/backend_cuda.h"
#include "engine/video/video_pipeline.h"
#include "tests/pipeline_models_fixture.h"
#include "tests/video/clips.h"

using namespace gpen;
using namespace gpen_test::video;
namespace fs = std::filesystem;

namespace {

// Consecutive frames through Restorer::restore, their faces in shared GPEN batches; what the
// restorer found in each frame is kept (the composite goes on to the writer).
struct RestoreFrames : video::FrameProcessor {
  Restorer* restorer = nullptr;
  std::vector<RestoreResult> results;
  int max_frames() const override { return std::clamp(restorer->plan().split.batch, 1, 8); }
  void process(std::span<video::VideoFrame* const> frames) override {
    std::vector<ImageView> views;
    for (const video::VideoFrame* f : frames) views.push_back(f->image);
    std::vector<RestoreResult> done = restorer->restore(views);
    for (size_t i = 0; i < frames.size(); ++i) {
      frames[i]->image = std::move(done[i].image);
      frames[i]->faces = done[i].restored;
      results.push_back(std::move(done[i]));
    }
  }
};

struct Restored {
  std::vector<Image> frames;  // as written and read back
  std::vector<RestoreResult> results;
  std::string device;
};

// The clip's frames before `seconds` through the pipeline with `restorer`, written as FFV1 BGR
// (lossless: the frames read back are the restored frames exactly) and read back.
Restored run_video(Restorer& restorer, const std::string& in, double seconds, const fs::path& out) {
  video::VideoReadOptions ro;
  ro.duration_s = seconds;
  video::VideoReader reader(in, ro);
  video::EncodeSettings s;
  s.codec = "ffv1";
  s.pix_fmt = "bgr0";
  video::VideoWriter writer(reader, out.string(), s, reader.info().width, reader.info().height);
  RestoreFrames step;
  step.restorer = &restorer;
  const video::PipelineStats stats = video::run_pipeline(reader, step, writer);
  CHECK(stats.frames == int64_t(step.results.size()));
  return {read_all(out.string()), std::move(step.results), restorer.plan().device};
}

struct Diff {
  int max = 0;
  size_t differing = 0, total = 0;
};
Diff diff(const Image& a, const Image& b) {
  REQUIRE(a.width == b.width);
  REQUIRE(a.height == b.height);
  Diff d;
  d.total = a.bgr.size();
  for (size_t i = 0; i < a.bgr.size(); ++i) {
    const int e = std::abs(int{a.bgr[i]} - int{b.bgr[i]});
    d.max = std::max(d.max, e);
    d.differing += e != 0;
  }
  return d;
}

// Pixels (all three channels) within one level, and the PSNR, as test_pipeline.cpp measures the
// composite against the official pipeline's.
struct Agreement {
  double within1 = 0, psnr = 0;
};
Agreement agreement(const Image& a, const Image& b) {
  size_t n1 = 0;
  double se = 0;
  for (size_t p = 0; p < a.pixels(); ++p) {
    int m = 0;
    for (int c = 0; c < 3; ++c) {
      const int d = std::abs(int{a.bgr[p * 3 + c]} - int{b.bgr[p * 3 + c]});
      se += double(d) * d;
      m = std::max(m, d);
    }
    n1 += m <= 1;
  }
  const double mse = se / (double(a.pixels()) * 3);
  return {double(n1) / double(a.pixels()), mse > 0 ? 10 * std::log10(255.0 * 255.0 / mse) : 999.0};
}

}  // namespace

TEST_CASE("video on CUDA: the first frames of a clip restored as on the CPU") {
  pipeline_test::Models m;
  if (!pipeline_test::prepare(m, "test_cuda_video")) return;
  RestoreConfig c;
  c.model = m.gpen;      // the s32 GPEN fixture
  c.detector = m.det;    // the real mobilenet0.25
  c.precision = "fp32";  // the CPU's: the comparison measures the device's ops, not a rounding
  c.threads = 1;
  c.device = DeviceKind::cpu;
  auto cpu = Restorer::open(c);
  c.device = DeviceKind::cuda;
  auto dev = Restorer::open(c, &cuda::cuda_provider());
  CHECK(dev->plan().pipeline_on_device);

  // Three frames of six children's faces at 320x240 (each restored frame costs the emulator
  // seconds), faces close enough that their paste masks overlap.
  const std::string in = clip("faces_320.mp4");
  const double seconds = 0.11;  // 25 fps: frames at 0, 40 and 80 ms
  const fs::path dir = fs::path(gpen_test::binary_dir()) / ("cuda-video-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const Restored want = run_video(*cpu, in, seconds, dir / "cpu.mkv");
  const Restored got = run_video(*dev, in, seconds, dir / "cuda.mkv");
  const std::vector<Image> input = read_all(in);
  fs::remove_all(dir);

  CHECK(want.device == "cpu");
  CHECK(got.device == "cuda");
  REQUIRE(want.frames.size() == 3);
  REQUIRE(got.frames.size() == want.frames.size());
  REQUIRE(got.results.size() == want.results.size());
  for (size_t i = 0; i < got.frames.size(); ++i) {
    CAPTURE(i);
    const RestoreResult& g = got.results[i];
    const RestoreResult& w = want.results[i];
    CHECK(w.restored >= 2);  // faces found and restored in every frame
    CHECK(want.frames[i].bgr != input[i].bgr);
    // The bounds of test_cuda_pipeline.cpp (the photo on the device against the host steps),
    // which hold here too: the CPU's and the device's fp32 convolutions differ by ~3e-7 relative
    // (test_cuda_backend.cpp), the detection decode by the host compiler's fused multiply-adds.
    // Detection: well under a thousandth of a pixel.
    REQUIRE(g.faces.size() == w.faces.size());
    CHECK(g.restored == w.restored);
    for (size_t f = 0; f < g.faces.size(); ++f) {
      CHECK(g.faces[f].score == doctest::Approx(w.faces[f].score).epsilon(1e-6));
      for (int k = 0; k < 4; ++k) CHECK(std::fabs(g.faces[f].box[k] - w.faces[f].box[k]) < 1e-3f);
      for (int k = 0; k < 10; ++k) CHECK(std::fabs(g.faces[f].landmarks[k] - w.faces[f].landmarks[k]) < 1e-3f);
    }
    // Restored faces: a landmark a few ulp away can move a warp tap across a 1/32-pixel cell (a
    // crop pixel a level or two), which GPEN spreads a little.
    REQUIRE(g.restored_faces.size() == w.restored_faces.size());
    int face_max = 0;
    for (size_t f = 0; f < g.restored_faces.size(); ++f) {
      CAPTURE(f);
      const Diff d = diff(g.restored_faces[f], w.restored_faces[f]);
      face_max = std::max(face_max, d.max);
      CHECK(d.max <= 2);
      CHECK(d.differing <= d.total / 100);
    }
    // The frame: at most 1 byte in 1000 differs (test_cuda_pipeline.cpp). Its bound on the size
    // of a difference, 2 levels, holds where one face owns a pixel; where two faces' warped
    // masks are equal to the last bits (six faces close together) the pasting rule ("the new
    // face where its mask is greater") may give the pixel to the other face, which can differ by
    // any amount. That is what test_pipeline.cpp allows the composite against the official
    // pipeline's ("flips which face owns a handful of pixels where two masks are equal"): its
    // regression guard, at least 99.9 % of the pixels within one level and PSNR >= 55 dB.
    const Diff d = diff(got.frames[i], want.frames[i]);
    const Agreement a = agreement(got.frames[i], want.frames[i]);
    MESSAGE("frame " << i << ": " << w.restored << " faces (max diff " << face_max << "); frame max diff " << d.max
                     << ", " << d.differing << " of " << d.total << " bytes differ, " << a.within1 * 100
                     << " % of pixels within 1 level, PSNR " << a.psnr << " dB");
    CHECK(d.differing <= d.total / 1000);
    CHECK(a.within1 >= 0.999);
    CHECK(a.psnr >= 55.0);
  }
}
