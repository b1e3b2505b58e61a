#pragma once
// Which encoder re-encodes the restored frames, in which pixel format, with which settings: one
// rule table by the input's codec family (encoder_choice.cpp), then what the user asked for.
#include <string>
#include <utility>
#include <vector>

#include "engine/video/av_util.h"

namespace gpen::video {

struct EncodeSettings {
  std::string codec;    // an FFmpeg encoder's name; empty: the table's for the input's codec
  std::string pix_fmt;  // empty: the input's, or the encoder's nearest to it
  int crf = -1;         // -1: the table's (encoders with a "crf" option only)
  std::string preset;   // empty: the table's (encoders with a "preset" option only)
  int threads = 0;      // encoder threads; 0: FFmpeg's choice
};

struct EncoderChoice {
  std::string encoder;  // "libx264"
  std::string pix_fmt;  // "yuv420p"
  std::vector<std::pair<std::string, std::string>> options;  // set on the encoder: {"crf", "18"}
  std::string rule;     // in words: "H.264 input (h264): libx264 yuv420p, crf 18, preset medium"
};

// The choice for a video stream of codec `input` in pixel format `input_fmt`. Throws gpen::Error
// when the named encoder or pixel format does not exist or does not fit, or when --crf or
// --preset name an option the encoder lacks. (Whether the output container can hold the codec,
// its muxer says when the writer starts the file.)
EncoderChoice choose_encoder(AVCodecID input, AVPixelFormat input_fmt, const EncodeSettings& s);

}  // namespace gpen::video
