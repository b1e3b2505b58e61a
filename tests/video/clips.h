#pragma once
// What the video tests share: their clips (tests/video/make_clips.py, made once into the build
// folder by the first test that asks), cv2.VideoCapture's frames of them, and the ffmpeg and
// ffprobe programs' views of a file (packet checksums of a stream, frame timestamps, tags).
#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/video/video_reader.h"
#include "tests/run_command.h"
#include "tests/test_paths.h"

namespace gpen_test::video {

inline std::string clips_dir() {
  static const std::string dir = [] {
    const std::string d = binary_dir() + "/video-clips";
    std::string log;
    const int rc = run("GPEN_SHARED_DIR=" + shared_dir() + " /usr/bin/python3 " GPEN_SOURCE_DIR
                       "/tests/video/make_clips.py " + d, &log);
    if (rc != 0)
      throw std::runtime_error("tests/video/make_clips.py failed (scripts/setup.sh installs ffmpeg and "
                               "python3-opencv): " + log);
    return d;
  }();
  return dir;
}
inline std::string clip(const std::string& name) { return clips_dir() + "/" + name; }

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Every frame cv2.VideoCapture read from a clip (suffix ".cv2", or ".cv2-stored" for the rotated
// clips read with CAP_PROP_ORIENTATION_AUTO off).
struct Cv2Frames {
  int frames = 0, width = 0, height = 0;
  std::string bgr;
  std::string frame(int i) const {
    const size_t n = size_t(width) * height * 3;
    return bgr.substr(size_t(i) * n, n);
  }
};
inline Cv2Frames cv2_frames(const std::string& name, const std::string& suffix = ".cv2") {
  const auto meta = nlohmann::json::parse(read_bytes(clip(name) + suffix + ".json"));
  Cv2Frames c{meta["frames"], meta["width"], meta["height"], read_bytes(clip(name) + suffix + ".bgr")};
  REQUIRE(c.bgr.size() == size_t(c.frames) * c.width * c.height * 3);
  return c;
}

inline std::string bytes_of(const gpen::Image& img) { return std::string(img.bgr.begin(), img.bgr.end()); }

// Every frame the engine's reader gives.
inline std::vector<gpen::Image> read_all(gpen::video::VideoReader& r) {
  std::vector<gpen::Image> out;
  gpen::video::VideoFrame f;
  while (r.read(f)) out.push_back(f.image);
  return out;
}
inline std::vector<gpen::Image> read_all(const std::string& path, const gpen::video::VideoReadOptions& opt = {}) {
  gpen::video::VideoReader r(path, opt);
  return read_all(r);
}

inline std::string command_output(const std::string& cmd) {
  std::string out;
  const int rc = run(cmd, &out);
  INFO(cmd);
  INFO(out);
  REQUIRE(rc == 0);
  return out;
}

// ffmpeg's checksum of the packets of the streams `map` selects ("0:a"), copied untouched.
inline std::string packets_md5(const std::string& path, const std::string& map) {
  return command_output("ffmpeg -v error -i " + path + " -map " + map + " -c copy -f md5 - 2>/dev/null");
}

// ffprobe's value of `entries` ("frame=pts_time", "stream=codec_name,pix_fmt") for the streams
// `select` names ("v:0"), one line per value.
inline std::string probe(const std::string& path, const std::string& select, const std::string& entries) {
  return command_output("ffprobe -v error -select_streams " + select + " -show_entries " + entries +
                        " -of default=noprint_wrappers=1 " + path + " 2>/dev/null");
}

}  // namespace gpen_test::video
