#include "engine/video/encoder_choice.h"

#include <cstring>

extern "C" {
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
}

#include "engine/core/error.h"

namespace gpen::video {
namespace {

// The input's codec family -> the encoder that re-encodes it and its settings: visually lossless
// constant quality for the lossy families, FFV1 for lossless input. Anything else: H.264.
struct Rule {
  const char* family;
  AVCodecID codec;  // AV_CODEC_ID_NONE: lossless-only codecs (the descriptor says so)
  const char* encoder;
  std::vector<std::pair<std::string, std::string>> options;
};

const std::vector<Rule>& rules() {
  static const std::vector<Rule> table = {
      {"H.264", AV_CODEC_ID_H264, "libx264", {{"crf", "18"}, {"preset", "medium"}}},
      {"HEVC", AV_CODEC_ID_HEVC, "libx265", {{"crf", "20"}, {"preset", "medium"}, {"x265-params", "log-level=error"}}},
      {"VP9", AV_CODEC_ID_VP9, "libvpx-vp9", {{"crf", "20"}, {"b", "0"}, {"row-mt", "1"}}},
      {"AV1", AV_CODEC_ID_AV1, "libaom-av1", {{"crf", "20"}, {"cpu-used", "6"}, {"row-mt", "1"}}},
      {"VP8", AV_CODEC_ID_VP8, "libvpx", {{"crf", "10"}, {"b", "4M"}}},
      {"lossless", AV_CODEC_ID_NONE, "ffv1", {}},
  };
  return table;
}
const Rule kFallback = {"other", AV_CODEC_ID_NONE, "libx264", {{"crf", "18"}, {"preset", "medium"}}};

bool lossless_only(AVCodecID id) {
  const AVCodecDescriptor* d = avcodec_descriptor_get(id);
  return d && (d->props & AV_CODEC_PROP_LOSSLESS) && !(d->props & AV_CODEC_PROP_LOSSY);
}

const Rule& rule_for_input(AVCodecID input) {
  for (const Rule& r : rules())
    if (r.codec == input || (r.codec == AV_CODEC_ID_NONE && lossless_only(input))) return r;
  return kFallback;
}

const Rule* rule_for_encoder(const std::string& encoder) {
  for (const Rule& r : rules())
    if (encoder == r.encoder) return &r;
  return encoder == kFallback.encoder ? &kFallback : nullptr;
}

bool has_option(const AVCodec* codec, const char* name) {
  const AVClass* cls = codec->priv_class;
  return cls && av_opt_find(&cls, name, nullptr, 0, AV_OPT_SEARCH_FAKE_OBJ);
}

void set_option(std::vector<std::pair<std::string, std::string>>& opts, const std::string& key, const std::string& value) {
  for (auto& [k, v] : opts)
    if (k == key) {
      v = value;
      return;
    }
  opts.emplace_back(key, value);
}

std::string pix_fmt_name(AVPixelFormat f) {
  const char* n = av_get_pix_fmt_name(f);
  return n ? n : "none";
}

std::string supported_formats(const AVCodec* codec) {
  std::string s;
  for (const AVPixelFormat* p = codec->pix_fmts; p && *p != AV_PIX_FMT_NONE; ++p) {
    if (!s.empty()) s += ' ';
    s += pix_fmt_name(*p);
  }
  return s;
}

bool supports(const AVCodec* codec, AVPixelFormat f) {
  if (!codec->pix_fmts) return true;  // the encoder takes any
  for (const AVPixelFormat* p = codec->pix_fmts; *p != AV_PIX_FMT_NONE; ++p)
    if (*p == f) return true;
  return false;
}

}  // namespace

EncoderChoice choose_encoder(AVCodecID input, AVPixelFormat input_fmt, const EncodeSettings& s) {
  const Rule& by_input = rule_for_input(input);
  EncoderChoice c;
  c.encoder = s.codec.empty() ? by_input.encoder : s.codec;
  const AVCodec* codec = avcodec_find_encoder_by_name(c.encoder.c_str());
  GPEN_CHECK(codec, "--codec " + c.encoder + ": FFmpeg has no such encoder (`ffmpeg -encoders` lists them)");
  GPEN_CHECK(codec->type == AVMEDIA_TYPE_VIDEO, "--codec " + c.encoder + ": not a video encoder");
  const Rule* rule = rule_for_encoder(c.encoder);
  if (rule) c.options = rule->options;

  if (s.crf >= 0) {
    GPEN_CHECK(has_option(codec, "crf"), "--crf: the encoder " + c.encoder + " has no CRF setting");
    set_option(c.options, "crf", std::to_string(s.crf));
  }
  if (!s.preset.empty()) {
    GPEN_CHECK(has_option(codec, "preset"), "--preset: the encoder " + c.encoder + " has no preset setting");
    set_option(c.options, "preset", s.preset);
  }

  AVPixelFormat fmt = input_fmt;
  if (!s.pix_fmt.empty()) {
    fmt = av_get_pix_fmt(s.pix_fmt.c_str());
    GPEN_CHECK(fmt != AV_PIX_FMT_NONE, "--pix-fmt " + s.pix_fmt + ": no such pixel format (`ffmpeg -pix_fmts`)");
    GPEN_CHECK(supports(codec, fmt), "--pix-fmt " + s.pix_fmt + ": the encoder " + c.encoder + " takes " +
                                         supported_formats(codec));
  } else if (!supports(codec, fmt)) {
    fmt = avcodec_find_best_pix_fmt_of_list(codec->pix_fmts, input_fmt, 0, nullptr);
    GPEN_CHECK(fmt != AV_PIX_FMT_NONE, "the encoder " + c.encoder + " takes no pixel format near " +
                                           pix_fmt_name(input_fmt));
  }
  c.pix_fmt = pix_fmt_name(fmt);

  c.rule = (s.codec.empty() ? std::string(by_input.family) + " input (" + avcodec_get_name(input) + ")" : "--codec") +
           ": " + c.encoder + " " + c.pix_fmt;
  if (lossless_only(codec->id)) c.rule += ", lossless";
  // x265-params only quiets its log here: not a setting of the pictures.
  for (const auto& [k, v] : c.options)
    if (k != "x265-params") c.rule += ", " + k + " " + v;
  if (c.options.empty() && !lossless_only(codec->id)) c.rule += ", FFmpeg's defaults";
  return c;
}

}  // namespace gpen::video
