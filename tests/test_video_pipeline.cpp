// The threaded pipeline: the processing step gets consecutive frames in runs of up to its batch,
// in order, and what it does to them is what gets written; a processing error or a cancellation
// stops every stage and leaves no output file (nor its temporary); damaged inputs still give a
// finished, playable output of the frames that decode.
#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/video/video_pipeline.h"
#include "tests/video/clips.h"

using namespace gpen;
using namespace gpen_test::video;
namespace fs = std::filesystem;

namespace {

fs::path out_dir() {
  const fs::path d = fs::path(gpen_test::binary_dir()) / ("video-pipeline-test-" + std::to_string(getpid()));
  fs::create_directories(d);
  return d;
}

video::EncodeSettings lossless_rgb() {
  video::EncodeSettings s;
  s.codec = "ffv1";
  s.pix_fmt = "bgr0";  // FFmpeg 5.1's FFV1 takes 8-bit RGB as bgr0 (planar gbrp from 9 bits on)
  return s;
}

// Inverts every pixel, counts one face per frame, and records the runs it was handed.
struct Invert : video::FrameProcessor {
  int batch = 1;
  std::vector<std::vector<int64_t>> runs;
  int max_frames() const override { return batch; }
  void process(std::span<video::VideoFrame* const> frames) override {
    runs.emplace_back();
    for (video::VideoFrame* f : frames) {
      for (auto& v : f->image.bgr) v = uint8_t(255 - v);
      f->faces = 1;
      runs.back().push_back(f->index);
    }
  }
};

}  // namespace

TEST_CASE("video pipeline: runs of consecutive frames up to the batch, written as processed") {
  const fs::path dir = out_dir();
  const std::string in = clip("h264_pan25_audio.mp4"), out = (dir / "inverted.mkv").string();
  video::VideoReader reader(in);
  video::VideoWriter writer(reader, out, lossless_rgb(), reader.info().width, reader.info().height);
  Invert inv;
  inv.batch = 5;
  std::vector<int64_t> progress;
  video::PipelineOptions opt;
  opt.progress = [&](const video::PipelineProgress& p) {
    progress.push_back(p.frames);
    CHECK(p.frames_total == 12);
    CHECK(p.faces == p.frames);
  };
  const auto stats = video::run_pipeline(reader, inv, writer, opt);
  CHECK(stats.frames == 12);
  CHECK(stats.faces == 12);
  CHECK(stats.frames_in_flight == 2 * 4 + 5 + 2);
  CHECK(stats.frame_bytes == 160 * 120 * 3);
  CHECK(progress.size() == 12);
  CHECK(progress.back() == 12);
  int64_t next = 0;
  for (const auto& run : inv.runs) {
    CHECK(run.size() <= 5);
    for (int64_t i : run) CHECK(i == next++);
  }
  CHECK(next == 12);
  CHECK(inv.runs.size() == 3);  // 5 + 5 + 2: the decoder keeps up with a step that does little
  const auto a = read_all(in), b = read_all(out);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    auto inverted = a[i].bgr;
    for (auto& v : inverted) v = uint8_t(255 - v);
    CHECK(inverted == b[i].bgr);
  }
  fs::remove_all(dir);
}

TEST_CASE("video pipeline: an error or a cancellation leaves no output behind") {
  const fs::path dir = out_dir();
  struct Failing : video::FrameProcessor {
    int calls = 0;
    void process(std::span<video::VideoFrame* const>) override {
      if (++calls == 3) throw Error("processing failed on purpose");
    }
  };
  struct Cancelling : video::FrameProcessor {
    std::atomic<bool>* flag = nullptr;
    int calls = 0;
    void process(std::span<video::VideoFrame* const>) override {
      if (++calls == 2) flag->store(true);
    }
  };
  const std::string out = (dir / "never.mkv").string();
  {
    video::VideoReader reader(clip("h264_pan25_audio.mp4"));
    video::VideoWriter writer(reader, out, lossless_rgb(), reader.info().width, reader.info().height);
    Failing fail;
    CHECK_THROWS_WITH_AS(video::run_pipeline(reader, fail, writer), "processing failed on purpose", Error);
  }
  CHECK(fs::is_empty(dir));
  {
    std::atomic<bool> cancel{false};
    video::VideoReadOptions ro;
    ro.cancel = &cancel;
    video::VideoReader reader(clip("h264_pan25_audio.mp4"), ro);
    video::VideoWriter writer(reader, out, lossless_rgb(), reader.info().width, reader.info().height);
    Cancelling stop;
    stop.flag = &cancel;
    video::PipelineOptions opt;
    opt.cancel = &cancel;
    CHECK_THROWS_AS(video::run_pipeline(reader, stop, writer, opt), video::Cancelled);
    CHECK(stop.calls == 2);
  }
  CHECK(fs::is_empty(dir));
  fs::remove_all(dir);
}

TEST_CASE("video pipeline: damaged inputs give a finished output of the frames that decode") {
  const fs::path dir = out_dir();
  for (const char* name : {"truncated.mp4", "corrupt.mkv"}) {
    INFO(name);
    const std::string out = (dir / (std::string(name) + ".mkv")).string();
    video::VideoReader reader(clip(name));
    video::VideoWriter writer(reader, out, lossless_rgb(), reader.info().width, reader.info().height);
    Invert inv;
    const auto stats = video::run_pipeline(reader, inv, writer);
    CHECK(reader.damage().any());
    CHECK(stats.frames == reader.frames_read());
    CHECK(stats.frames >= 2);
    // Playable: ffprobe decodes every frame written.
    CHECK(probe(out, "v:0", "stream=nb_read_frames -count_frames") ==
          "nb_read_frames=" + std::to_string(stats.frames) + "\n");
  }
  fs::remove_all(dir);
}
