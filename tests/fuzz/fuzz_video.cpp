// libFuzzer target: container bytes through the video reader (FFmpeg's demuxers and decoders, then
// the engine's conversion and rotation). A read either fails with gpen::Error naming the input or
// gives frames of the size the reader announced (ASan checks every touch of their buffers); the
// damage it counts is only reported. The seed corpus is made at fuzz time (scripts/fuzz.sh).
#include <cstddef>
#include <cstdint>

#include "engine/core/error.h"
#include "engine/video/video_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gpen::video::VideoReadOptions opt;
  opt.max_pixels = int64_t{1} << 20;  // keeps each run within libFuzzer's memory limit
  opt.threads = 1;                    // deterministic, and within the fuzzer's thread
  try {
    gpen::video::VideoReader reader(data, size, "fuzz", opt);
    const gpen::video::VideoInfo& info = reader.info();
    gpen::video::VideoFrame f;
    for (int i = 0; i < 16 && reader.read(f); ++i) {
      if (f.image.width != info.width || f.image.height != info.height ||
          f.image.bgr.size() != f.image.pixels() * 3)
        __builtin_trap();
      volatile uint8_t sink = f.image.bgr.front() ^ f.image.bgr.back();
      (void)sink;
    }
    (void)reader.damage().describe();
  } catch (const gpen::Error&) {
  }
  return 0;
}
