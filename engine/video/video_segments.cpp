#include "engine/video/video_segments.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "engine/core/error.h"
#include "engine/video/av_util.h"
#include "engine/video/video_writer.h"

namespace gpen::video {
namespace {

// An input opened for its packets alone.
struct Demuxer {
  std::string path;
  AVFormatContext* ic = nullptr;
  const AVStream* st = nullptr;

  explicit Demuxer(const std::string& p) : path(p) {
    capture_ffmpeg_log();
    int err = avformat_open_input(&ic, path.c_str(), nullptr, nullptr);
    if (err < 0) throw Error(path + ": " + av_error_text(err));
    err = avformat_find_stream_info(ic, nullptr);
    if (err < 0) throw Error(path + ": cannot read the streams' parameters: " + av_error_text(err));
    st = first_video_stream(ic);
    if (!st) throw Error(path + ": no video stream");
  }
  ~Demuxer() { avformat_close_input(&ic); }
  Demuxer(const Demuxer&) = delete;
  Demuxer& operator=(const Demuxer&) = delete;

  // The next packet of the video stream; false at the end.
  bool next_video(AVPacket* p) {
    for (;;) {
      const int r = av_read_frame(ic, p);
      if (r == AVERROR_EOF) return false;
      if (r < 0) throw Error(path + ": " + av_error_text(r));
      if (p->stream_index == st->index) return true;
      av_packet_unref(p);
    }
  }
};

int64_t packet_time(const AVPacket* p) { return p->dts != AV_NOPTS_VALUE ? p->dts : p->pts; }

}  // namespace

std::vector<double> keyframe_cuts(const std::string& path) {
  Demuxer in(path);
  const AVRational tb = in.st->time_base;
  const int64_t start = in.st->start_time == AV_NOPTS_VALUE ? 0 : in.st->start_time;
  std::vector<int64_t> keys;
  PacketPtr p(av_packet_alloc());
  while (in.next_video(p.get())) {
    const int64_t ts = p->pts != AV_NOPTS_VALUE ? p->pts : p->dts;
    if ((p->flags & AV_PKT_FLAG_KEY) && !(p->flags & AV_PKT_FLAG_DISCARD) && ts != AV_NOPTS_VALUE)
      keys.push_back(ts - start);
    av_packet_unref(p.get());
  }
  take_logged_errors(true);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::vector<double> cuts;
  for (const int64_t k : keys)
    if (k > 0) cuts.push_back((double(k) - 0.25) * av_q2d(tb));
  return cuts;
}

int64_t join_segments(const std::string& source, const std::vector<std::string>& segments,
                      const std::string& output, const VideoReadOptions& run) {
  GPEN_CHECK(!segments.empty(), output + ": no segments to join");
  VideoReadOptions ro = run;
  ro.other_streams = true;
  VideoReader src(source, ro);
  const double origin_s = double(src.start_offset_us()) / AV_TIME_BASE;
  auto seg = std::make_unique<Demuxer>(segments.front());
  VideoWriter writer(src, output, seg->st);
  const AVCodecID codec = seg->st->codecpar->codec_id;

  PacketPtr video(av_packet_alloc());
  size_t next_segment = 1;
  int64_t last = AV_NOPTS_VALUE;
  AVRational last_tb{1, 1};
  // The next video packet, from the segments in turn; false after the last.
  auto next_video = [&]() -> bool {
    for (;;) {
      if (seg->next_video(video.get())) {
        const int64_t t = packet_time(video.get());
        if (t == AV_NOPTS_VALUE) return true;
        if (last != AV_NOPTS_VALUE && av_compare_ts(t, seg->st->time_base, last, last_tb) <= 0)
          throw Error(seg->path + ": its timestamps overlap the previous segment's (segments must begin at keyframes)");
        last = t;
        last_tb = seg->st->time_base;
        return true;
      }
      if (next_segment == segments.size()) return false;
      seg = std::make_unique<Demuxer>(segments[next_segment++]);
      if (seg->st->codecpar->codec_id != codec) throw Error(seg->path + ": another codec than the first segment's");
    }
  };
  // The other streams' packets, as a single run copies them.
  std::vector<PacketPtr> others;
  size_t at = 0;
  bool others_left = true;
  auto next_other = [&]() -> AVPacket* {
    while (at == others.size()) {
      if (!others_left || !src.read_other_streams(others)) {
        others_left = false;
        return nullptr;
      }
      at = 0;
    }
    return others[at].get();
  };
  // Interleaved by time on the output's clock.
  auto video_s = [&] {
    const int64_t t = packet_time(video.get());
    return t == AV_NOPTS_VALUE ? -INFINITY : seconds(t, seg->st->time_base);
  };
  auto other_s = [&](const AVPacket* p) {
    const int64_t t = packet_time(p);
    return t == AV_NOPTS_VALUE ? -INFINITY : seconds(t, src.format()->streams[p->stream_index]->time_base) - origin_s;
  };
  int64_t written = 0;
  bool have_video = next_video();
  AVPacket* other = next_other();
  while (have_video || other) {
    if (have_video && (!other || video_s() <= other_s(other))) {
      writer.write_encoded(video.get(), seg->st->time_base);
      av_packet_unref(video.get());
      ++written;
      have_video = next_video();
    } else {
      writer.write_copied(other);
      ++at;
      other = next_other();
    }
  }
  writer.finish();
  return written;
}

}  // namespace gpen::video
