// The video reader against cv2.VideoCapture (python3-opencv on the same FFmpeg): every frame bit
// for bit (8-bit and 10-bit 4:2:0 H.264, 10-bit HEVC, VP9, AV1, a variable frame rate, rotation
// metadata with and without the orientation applied), the damage of broken files counted while
// the frames that decode still come out, and a file FFmpeg cannot open named in the error.
#include <doctest/doctest.h>

#include <string>

#include "engine/core/error.h"
#include "engine/video/video_reader.h"
#include "tests/video/clips.h"

using namespace gpen;
using namespace gpen_test::video;

namespace {

void check_equal_to_cv2(const std::string& name, const video::VideoReadOptions& opt = {},
                        const std::string& suffix = ".cv2") {
  INFO(name << suffix);
  const Cv2Frames want = cv2_frames(name, suffix);
  const auto got = read_all(clip(name), opt);
  REQUIRE(int(got.size()) == want.frames);
  for (int i = 0; i < want.frames; ++i) {
    INFO("frame " << i);
    REQUIRE(got[i].width == want.width);
    REQUIRE(got[i].height == want.height);
    CHECK(bytes_of(got[i]) == want.frame(i));
  }
}

}  // namespace

TEST_CASE("video reader: frames equal cv2.VideoCapture's bit for bit") {
  for (const char* name : {"h264_pan25_audio.mp4", "h264_zoom24_subs.mkv", "h264_10bit30.mp4", "hevc_10bit.mkv",
                           "vfr.mp4", "vp9.webm", "av1.mkv"})
    check_equal_to_cv2(name);
}

TEST_CASE("video reader: rotation applied as cv2 applies it, or ignored") {
  for (const char* name : {"rot90.mp4", "rot270.mp4"}) {
    check_equal_to_cv2(name);
    video::VideoReadOptions stored;
    stored.apply_orientation = false;
    check_equal_to_cv2(name, stored, ".cv2-stored");
  }
  const video::VideoReader r(clip("rot90.mp4"));
  CHECK(r.info().rotation == 90);
  CHECK(r.info().width == 120);
  CHECK(r.info().height == 160);
  CHECK(r.info().stored_width == 160);
}

TEST_CASE("video reader: what it tells of a clip") {
  video::VideoReader r(clip("hevc_10bit.mkv"));
  const video::VideoInfo& i = r.info();
  CHECK(i.codec == "hevc");
  CHECK(i.pix_fmt == "yuv420p10le");
  CHECK(i.width == 176);
  CHECK(i.height == 144);
  CHECK(i.rotation == 0);
  CHECK(i.color_primaries == "bt709");
  CHECK(i.color_space == "bt709");
  CHECK(i.color_range == "tv");
  CHECK(i.fps == doctest::Approx(25));
  const auto frames = read_all(r);
  CHECK(frames.size() == 8);
  CHECK_FALSE(r.damage().any());
}

TEST_CASE("video reader: the other streams' packets come with the frames") {
  video::VideoReader r(clip("h264_pan25_audio.mp4"));
  video::VideoFrame f;
  size_t packets = 0;
  int64_t last_index = -1;
  while (r.read(f)) {
    CHECK(f.index == last_index + 1);
    last_index = f.index;
    packets += f.copied.size();
  }
  CHECK(f.end);
  packets += f.copied.size();
  // 0.48 s of 16 kHz AAC: 1024-sample frames, and the priming frame.
  CHECK(packets >= 8);
  CHECK(r.frames_read() == 12);
}

TEST_CASE("video reader: colour codes no standard defines read as unspecified") {
  // The stream's sequence display extension says primaries 205, transfer 200, matrix 190.
  check_equal_to_cv2("mpeg2_unknown_colour.m2v");
  video::VideoReader r(clip("mpeg2_unknown_colour.m2v"));
  CHECK(r.info().codec == "mpeg2video");
  CHECK(r.info().color_primaries == "unknown");
  CHECK(r.info().color_trc == "unknown");
  CHECK(r.info().color_space == "unknown");
}

TEST_CASE("video reader: bytes in memory read as the file") {
  const std::string bytes = read_bytes(clip("vfr.mp4"));
  video::VideoReader r(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "vfr.mp4 in memory");
  const auto mem = read_all(r);
  const auto file = read_all(clip("vfr.mp4"));
  REQUIRE(mem.size() == file.size());
  for (size_t i = 0; i < mem.size(); ++i) CHECK(mem[i].bgr == file[i].bgr);
}

TEST_CASE("video reader: --start and --duration cut the frames cv2 reads at those times") {
  const Cv2Frames all = cv2_frames("h264_pan25_audio.mp4");
  video::VideoReadOptions cut;
  cut.start_s = 0.2;      // frame 5 at 25 fps
  cut.duration_s = 0.2;   // frames 5..9
  video::VideoReader r(clip("h264_pan25_audio.mp4"), cut);
  video::VideoFrame f;
  int n = 0;
  while (r.read(f)) {
    INFO("frame " << n);
    CHECK(bytes_of(f.image) == all.frame(5 + n));
    ++n;
  }
  CHECK(n == 5);
  CHECK(r.start_offset_us() == 200000);
}

TEST_CASE("video reader: damaged files give the frames that decode and say what was lost") {
  {
    video::VideoReader r(clip("truncated.mp4"));
    const auto frames = read_all(r);
    CHECK(frames.size() >= 2);
    CHECK(frames.size() < 12);
    CHECK(r.damage().any());
    MESSAGE("truncated.mp4: " << frames.size() << " frames, " << r.damage().describe());
    // cv2 stops at the first packet the decoder refuses; the frames up to there are the same.
    const Cv2Frames want = cv2_frames("truncated.mp4");
    for (int i = 0; i < want.frames; ++i) CHECK(bytes_of(frames[i]) == want.frame(i));
  }
  {
    video::VideoReader r(clip("corrupt.mkv"));
    const auto frames = read_all(r);
    CHECK(frames.size() >= 6);
    CHECK(r.damage().any());
    MESSAGE("corrupt.mkv: " << frames.size() << " frames, " << r.damage().describe());
  }
}

TEST_CASE("video reader: a file FFmpeg cannot open is named with FFmpeg's reason") {
  for (const std::string name : {"not_a_video.mp4", "no_such_file.mp4"}) {
    const std::string path = clip(name);
    try {
      video::VideoReader r(path);
      FAIL("opened " << path);
    } catch (const Error& e) {
      const std::string what = e.what();
      INFO(what);
      CHECK(what.rfind(path + ": ", 0) == 0);
      CHECK(what.size() > path.size() + 4);
    }
  }
  video::VideoReadOptions small;
  small.max_pixels = 100 * 100;
  CHECK_THROWS_WITH_AS(video::VideoReader(clip("vfr.mp4"), small),
                       doctest::Contains("exceed --max-pixels"), Error);
}
