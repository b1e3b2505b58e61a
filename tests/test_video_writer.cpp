// The video writer through the pipeline with a processing step that leaves frames alone: with a
// lossless RGB codec the frames written are exactly the frames read; by default the input's codec
// family is re-encoded in its pixel format and colour description; every frame keeps its
// timestamp (checked with ffprobe, variable frame rate included), the audio and subtitle packets
// are copied untouched (ffmpeg's md5 of the packets), the rotation and the tags are kept.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "engine/core/error.h"
#include "engine/video/video_pipeline.h"
#include "tests/video/clips.h"

using namespace gpen;
using namespace gpen_test::video;
namespace fs = std::filesystem;

namespace {

struct Unchanged : video::FrameProcessor {
  void process(std::span<video::VideoFrame* const>) override {}
};

fs::path out_dir() {
  const fs::path d = fs::path(gpen_test::binary_dir()) / ("video-writer-test-" + std::to_string(getpid()));
  fs::create_directories(d);
  return d;
}

// `in` through the pipeline unchanged into `out`; the writer's choice.
video::EncoderChoice transcode(const std::string& in, const std::string& out, const video::EncodeSettings& s = {},
                               const video::VideoReadOptions& ro = {}) {
  video::VideoReader reader(in, ro);
  video::VideoWriter writer(reader, out, s, reader.info().width, reader.info().height);
  Unchanged same;
  const auto stats = video::run_pipeline(reader, same, writer);
  CHECK(stats.frames == reader.frames_read());
  CHECK(writer.frames_written() == reader.frames_read());
  CHECK_FALSE(fs::exists(writer.temp_path()));
  return writer.choice();
}

video::EncodeSettings lossless_rgb() {
  video::EncodeSettings s;
  s.codec = "ffv1";
  s.pix_fmt = "bgr0";  // FFmpeg 5.1's FFV1 takes 8-bit RGB as bgr0 (planar gbrp from 9 bits on)
  return s;
}

}  // namespace

TEST_CASE("video writer: ffv1 in bgr0 writes the frames exactly, timestamps, audio and tags kept") {
  const fs::path dir = out_dir();
  for (const char* name : {"h264_pan25_audio.mp4", "vfr.mp4", "h264_10bit30.mp4"}) {
    INFO(name);
    // MP4 cannot hold FFV1; QuickTime, its sibling, keeps the same timestamps.
    const std::string in = clip(name), out = (dir / (std::string(name) + ".mov")).string();
    const auto choice = transcode(in, out, lossless_rgb());
    CHECK(choice.encoder == "ffv1");
    CHECK(choice.pix_fmt == "bgr0");
    const auto a = read_all(in), b = read_all(out);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].bgr == b[i].bgr);
    CHECK(probe(in, "v:0", "frame=pts_time") == probe(out, "v:0", "frame=pts_time"));
    // What cv2 reads from the output is what was written.
    const auto cv2_in = cv2_frames(name);
    for (size_t i = 0; i < b.size(); ++i) CHECK(bytes_of(b[i]) == cv2_in.frame(int(i)));
  }
  const std::string in = clip("h264_pan25_audio.mp4"), out = (dir / "h264_pan25_audio.mp4.mov").string();
  CHECK(packets_md5(in, "0:a") == packets_md5(out, "0:a"));
  CHECK(probe(out, "a:0", "stream_tags=language") == "TAG:language=fra\n");
  CHECK(command_output("ffprobe -v error -show_entries format_tags=title -of default=nw=1 " + out) ==
        "TAG:title=gpen video test\n");
  fs::remove_all(dir);
}

TEST_CASE("video writer: the input's codec family, pixel format and colour description by default") {
  const fs::path dir = out_dir();
  struct Case {
    const char* clip;
    const char* out;
    const char* encoder;
    const char* codec;
    const char* pix_fmt;
  };
  for (const Case c : {Case{"h264_pan25_audio.mp4", "a.mp4", "libx264", "h264", "yuv420p"},
                       Case{"vfr.mp4", "vfr.mp4", "libx264", "h264", "yuv420p"},
                       Case{"hevc_10bit.mkv", "b.mkv", "libx265", "hevc", "yuv420p10le"},
                       Case{"vp9.webm", "c.webm", "libvpx-vp9", "vp9", "yuv420p"},
                       Case{"av1.mkv", "d.mkv", "libaom-av1", "av1", "yuv420p"}}) {
    INFO(c.clip);
    const std::string in = clip(c.clip), out = (dir / c.out).string();
    const auto choice = transcode(in, out);
    CHECK(choice.encoder == c.encoder);
    CHECK(choice.pix_fmt == c.pix_fmt);
    const std::string kept = "stream=codec_name,pix_fmt,width,height,color_range,color_space,color_primaries,color_transfer";
    const std::string want = probe(in, "v:0", kept);
    CHECK(want.find(std::string("codec_name=") + c.codec) != std::string::npos);
    CHECK(probe(out, "v:0", kept) == want);
    CHECK(probe(in, "v:0", "frame=pts_time") == probe(out, "v:0", "frame=pts_time"));
  }
  CHECK(packets_md5(clip("h264_pan25_audio.mp4"), "0:a") == packets_md5((dir / "a.mp4").string(), "0:a"));
  // Colour codes no standard defines are written as unspecified, not refused.
  const std::string odd = (dir / "odd.mkv").string();
  transcode(clip("mpeg2_unknown_colour.m2v"), odd, lossless_rgb());
  CHECK(probe(odd, "v:0", "stream=color_primaries") == "color_primaries=unknown\n");
  CHECK(probe(odd, "v:0", "stream=color_transfer") == "color_transfer=unknown\n");
  fs::remove_all(dir);
}

TEST_CASE("video writer: subtitles copied, rotation kept, frames upright again on reading") {
  const fs::path dir = out_dir();
  const std::string subs = (dir / "subs.mkv").string();
  transcode(clip("h264_zoom24_subs.mkv"), subs);
  CHECK(packets_md5(clip("h264_zoom24_subs.mkv"), "0:s") == packets_md5(subs, "0:s"));

  const auto a = read_all(clip("rot90.mp4"));
  const std::string rot = (dir / "rot90.mov").string();
  transcode(clip("rot90.mp4"), rot, lossless_rgb());
  CHECK(probe(rot, "v:0", "stream_side_data=rotation") == probe(clip("rot90.mp4"), "v:0", "stream_side_data=rotation"));
  CHECK(probe(rot, "v:0", "stream=width,height") == "width=160\nheight=120\n");
  const auto b = read_all(rot);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].bgr == b[i].bgr);
  // Matroska has no place for the rotation: the frames are written upright.
  const std::string upright = (dir / "rot90.mkv").string();
  transcode(clip("rot90.mp4"), upright, lossless_rgb());
  CHECK(probe(upright, "v:0", "stream_side_data=rotation").empty());
  CHECK(probe(upright, "v:0", "stream=width,height") == "width=120\nheight=160\n");
  const auto c = read_all(upright);
  REQUIRE(a.size() == c.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].bgr == c[i].bgr);
  // With the orientation ignored on both sides, the stored frames go through unchanged too.
  video::VideoReadOptions stored;
  stored.apply_orientation = false;
  const std::string rot_stored = (dir / "rot90_stored.mov").string();
  transcode(clip("rot90.mp4"), rot_stored, lossless_rgb(), stored);
  const auto d = read_all(rot_stored, stored);
  const Cv2Frames want = cv2_frames("rot90.mp4", ".cv2-stored");
  REQUIRE(int(d.size()) == want.frames);
  for (int i = 0; i < want.frames; ++i) CHECK(bytes_of(d[i]) == want.frame(i));
  fs::remove_all(dir);
}

TEST_CASE("video writer: settings it cannot honour are refused before anything is written") {
  const fs::path dir = out_dir();
  video::VideoReader reader(clip("h264_pan25_audio.mp4"));
  const auto attempt = [&](const video::EncodeSettings& s, const std::string& out) {
    video::VideoWriter w(reader, (dir / out).string(), s, reader.info().width, reader.info().height);
  };
  video::EncodeSettings s;
  s.codec = "no-such-encoder";
  CHECK_THROWS_WITH_AS(attempt(s, "x.mkv"), doctest::Contains("no such encoder"), Error);
  s = {};
  s.codec = "ffv1";
  s.crf = 10;
  CHECK_THROWS_WITH_AS(attempt(s, "x.mkv"), doctest::Contains("has no CRF"), Error);
  s = {};
  s.pix_fmt = "gbrp";  // not a format libx264 takes
  CHECK_THROWS_WITH_AS(attempt(s, "x.mkv"), doctest::Contains("takes"), Error);
  // H.264 and AAC do not go into WebM.
  CHECK_THROWS_WITH_AS(attempt({}, "x.webm"), doctest::Contains("container refuses these streams"), Error);
  CHECK_THROWS_WITH_AS(attempt({}, "x.unknown-extension"), doctest::Contains("x.unknown-extension"), Error);
  CHECK(fs::is_empty(dir));
  fs::remove_all(dir);
}
