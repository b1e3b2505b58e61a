#include "engine/video/av_util.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>

extern "C" {
#include <libavutil/log.h>
#include <libavutil/pixdesc.h>
}

namespace gpen::video {

std::string av_error_text(int err) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(err, buf, sizeof buf);
  return buf;
}

double seconds(int64_t ts, AVRational tb) { return ts == AV_NOPTS_VALUE ? 0.0 : double(ts) * av_q2d(tb); }

namespace {
// The field's bits read as an int (memcpy: loading a value outside the enum's range through the
// enum type is what must not happen), kept when it is below the headers' count and FFmpeg names
// it, else replaced by `unset`.
template <class Enum, class NameOf>
void keep_if_named(Enum& field, NameOf name_of, Enum count, Enum unset) {
  static_assert(sizeof(Enum) == sizeof(int));
  int v = 0;
  std::memcpy(&v, &field, sizeof v);
  if (v < 0 || v >= int(count) || !name_of(static_cast<Enum>(v))) field = unset;
}
}  // namespace

void drop_unnamed_color_fields(AVCodecParameters* par) {
  keep_if_named(par->color_range, av_color_range_name, AVCOL_RANGE_NB, AVCOL_RANGE_UNSPECIFIED);
  keep_if_named(par->color_primaries, av_color_primaries_name, AVCOL_PRI_NB, AVCOL_PRI_UNSPECIFIED);
  keep_if_named(par->color_trc, av_color_transfer_name, AVCOL_TRC_NB, AVCOL_TRC_UNSPECIFIED);
  keep_if_named(par->color_space, av_color_space_name, AVCOL_SPC_NB, AVCOL_SPC_UNSPECIFIED);
  keep_if_named(par->chroma_location, av_chroma_location_name, AVCHROMA_LOC_NB, AVCHROMA_LOC_UNSPECIFIED);
}

namespace {

constexpr size_t kKeptMessages = 8;

std::mutex g_log_mutex;
LoggedErrors g_input, g_output;

// Encoders, muxers and output I/O log for the output; everything else (demuxers, decoders, the
// input's I/O, parsers, contexts without a class) for the input.
bool is_output_side(void* avcl) {
  if (!avcl) return false;
  const AVClass* c = *static_cast<const AVClass**>(avcl);
  if (!c) return false;
  const AVClassCategory cat = c->get_category ? c->get_category(avcl) : c->category;
  return cat == AV_CLASS_CATEGORY_ENCODER || cat == AV_CLASS_CATEGORY_MUXER || cat == AV_CLASS_CATEGORY_OUTPUT;
}

// Runs on whichever thread logs (decoder threads included).
void log_callback(void* avcl, int level, const char* fmt, va_list vl) {
  if (level > AV_LOG_ERROR) return;
  char line[512];
  int print_prefix = 1;
  av_log_format_line2(avcl, level, fmt, vl, line, sizeof line, &print_prefix);
  std::string text(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  std::lock_guard<std::mutex> lock(g_log_mutex);
  LoggedErrors& to = is_output_side(avcl) ? g_output : g_input;
  ++to.count;
  if (to.first.size() < kKeptMessages && !text.empty()) to.first.push_back(text);
}

}  // namespace

void capture_ffmpeg_log() {
  static std::once_flag once;
  std::call_once(once, [] {
    av_log_set_level(AV_LOG_ERROR);
    av_log_set_callback(log_callback);
  });
}

LoggedErrors take_logged_errors(bool input_side) {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  LoggedErrors& from = input_side ? g_input : g_output;
  LoggedErrors out = std::move(from);
  from = {};
  return out;
}

AVStream* first_video_stream(const AVFormatContext* ic) {
  for (unsigned i = 0; i < ic->nb_streams; ++i)
    if (ic->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_VIDEO &&
        !(ic->streams[i]->disposition & AV_DISPOSITION_ATTACHED_PIC))
      return ic->streams[i];
  return nullptr;
}

}  // namespace gpen::video
