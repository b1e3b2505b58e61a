// A video in segments (engine/video/video_segments.h): the keyframe cuts fall just before the
// keyframes; segments cut there, restored on the whole run's clock without the other streams and
// joined, give the file a single run gives: the same frames (losslessly encoded), video packet
// timestamps and audio packets, in Matroska and in MP4 (edit lists), whole and cut; segments that
// overlap are refused and leave no output.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/video/video_pipeline.h"
#include "engine/video/video_segments.h"
#include "tests/video/clips.h"

using namespace gpen;
using namespace gpen_test::video;
namespace fs = std::filesystem;

namespace {

const char* const kClip = "keyframes4_audio.mp4";  // keyframes at 0, 0.16 and 0.32 s; B-frames; AAC

fs::path out_dir() {
  const fs::path d = fs::path(gpen_test::binary_dir()) / ("video-segments-test-" + std::to_string(getpid()));
  fs::create_directories(d);
  return d;
}

// Inverts every pixel: what a segment does to a frame must not depend on its neighbours.
struct Invert : video::FrameProcessor {
  int max_frames() const override { return 3; }
  void process(std::span<video::VideoFrame* const> frames) override {
    for (video::VideoFrame* f : frames)
      for (auto& v : f->image.bgr) v = uint8_t(255 - v);
  }
};

void run(const video::VideoReadOptions& ro, const std::string& out) {
  video::EncodeSettings s;
  s.codec = "ffv1";
  s.pix_fmt = "bgr0";
  video::VideoReader reader(clip(kClip), ro);
  video::VideoWriter writer(reader, out, s, reader.info().width, reader.info().height);
  Invert inv;
  video::run_pipeline(reader, inv, writer);
}

// The segments of the cut [start, end) at the keyframe cuts inside it, restored; their files.
std::vector<std::string> segments(const fs::path& dir, const std::string& ext, double start, std::optional<double> end) {
  std::vector<double> bounds{start};
  for (double c : video::keyframe_cuts(clip(kClip)))
    if (c > start && (!end || c < *end)) bounds.push_back(c);
  std::vector<std::string> files;
  for (size_t k = 0; k < bounds.size(); ++k) {
    video::VideoReadOptions ro;
    ro.start_s = bounds[k];
    if (k + 1 < bounds.size())
      ro.duration_s = bounds[k + 1] - bounds[k];
    else if (end)
      ro.duration_s = *end - bounds[k];
    ro.run_start_s = start;
    ro.other_streams = false;
    files.push_back((dir / ("seg" + std::to_string(k) + ext)).string());
    run(ro, files.back());
  }
  return files;
}

}  // namespace

TEST_CASE("video segments: the keyframe cuts fall just before each keyframe after the first") {
  const std::vector<double> cuts = video::keyframe_cuts(clip(kClip));
  REQUIRE(cuts.size() == 2);
  CHECK(cuts[0] < 0.16);
  CHECK(cuts[0] > 0.16 - 1.0 / 12800);
  CHECK(cuts[1] < 0.32);
  CHECK(cuts[1] > 0.32 - 1.0 / 12800);
  CHECK_THROWS_AS(video::keyframe_cuts(clip("not_a_video.mp4")), Error);
}

TEST_CASE("video segments: joined, the segments are the single run's file") {
  const fs::path dir = out_dir();
  for (const std::string ext : {".mkv", ".mov"}) {
    for (const bool cut : {false, true}) {
      CAPTURE(ext);
      CAPTURE(cut);
      video::VideoReadOptions whole;
      if (cut) {
        whole.start_s = 0.1;
        whole.duration_s = 0.3;
      }
      const std::string one = (dir / ("one" + ext)).string(), joined = (dir / ("joined" + ext)).string();
      run(whole, one);
      const auto files = segments(dir, ext, whole.start_s, cut ? std::optional<double>(0.4) : std::nullopt);
      CHECK(files.size() == 3);
      const int64_t packets = video::join_segments(clip(kClip), files, joined, whole);
      const auto a = read_all(one), b = read_all(joined);
      CHECK(packets == int64_t(a.size()));
      CHECK(a.size() == (cut ? 7u : 12u));
      REQUIRE(a.size() == b.size());
      for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].bgr == b[i].bgr);
      CHECK(probe(joined, "v:0", "frame=pts_time") == probe(one, "v:0", "frame=pts_time"));
      CHECK(probe(joined, "v:0", "packet=pts,dts,duration") == probe(one, "v:0", "packet=pts,dts,duration"));
      CHECK(probe(joined, "a:0", "packet=pts,dts,duration") == probe(one, "a:0", "packet=pts,dts,duration"));
      CHECK(packets_md5(joined, "0:a") == packets_md5(one, "0:a"));
      for (const auto& f : files) fs::remove(f);
    }
  }
  fs::remove_all(dir);
}

TEST_CASE("video segments: segments out of order are refused and leave no output") {
  const fs::path dir = out_dir();
  auto files = segments(dir, ".mkv", 0, std::nullopt);
  REQUIRE(files.size() == 3);
  std::swap(files[0], files[1]);
  const std::string out = (dir / "joined.mkv").string();
  CHECK_THROWS_WITH_AS(video::join_segments(clip(kClip), files, out, {}),
                       doctest::Contains("overlap the previous segment's"), Error);
  CHECK(!fs::exists(out));
  for (const auto& e : fs::directory_iterator(dir)) CHECK(e.path().filename().string().find("joined") == std::string::npos);
  fs::remove_all(dir);
}
