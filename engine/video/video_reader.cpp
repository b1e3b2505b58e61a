#include "engine/video/video_reader.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

extern "C" {
#include <libavutil/display.h>
#include <libavutil/pixdesc.h>
}

#include "engine/core/error.h"
#include "engine/photo/exif.h"
#include "engine/video/av_util.h"
#include "engine/video/cv2_convert.h"

namespace gpen::video {

void PacketFree::operator()(AVPacket* p) const { av_packet_free(&p); }

namespace {

// Bytes in memory as an AVIOContext (the fuzz target and callers that hold a file already).
struct MemorySource {
  const uint8_t* data = nullptr;
  size_t size = 0, pos = 0;
};

int memory_read(void* opaque, uint8_t* buf, int n) {
  auto* m = static_cast<MemorySource*>(opaque);
  const size_t k = std::min(size_t(n), m->size - m->pos);
  if (k == 0) return AVERROR_EOF;
  std::memcpy(buf, m->data + m->pos, k);
  m->pos += k;
  return int(k);
}

int64_t memory_seek(void* opaque, int64_t offset, int whence) {
  auto* m = static_cast<MemorySource*>(opaque);
  if (whence & AVSEEK_SIZE) return int64_t(m->size);
  int64_t base = 0;
  switch (whence & ~AVSEEK_FORCE) {
    case SEEK_SET: base = 0; break;
    case SEEK_CUR: base = int64_t(m->pos); break;
    case SEEK_END: base = int64_t(m->size); break;
    default: return AVERROR(EINVAL);
  }
  if (offset > int64_t(m->size) - base || base + offset < 0) return AVERROR(EINVAL);
  m->pos = size_t(base + offset);
  return int64_t(m->pos);
}

// cv2's rotation (OpenCV 4.6): av_display_rotation_get's angle of the display matrix, rounded, in
// [0, 360); 90 then means that the stored frame is shown turned 90 degrees clockwise. FFmpeg's
// `-metadata:s:v rotate=90` and a phone held upright write 90.
int display_rotation(const AVStream* st) {
  const uint8_t* m = av_stream_get_side_data(st, AV_PKT_DATA_DISPLAYMATRIX, nullptr);
  if (!m) return 0;
  const double angle = av_display_rotation_get(reinterpret_cast<const int32_t*>(m));
  if (std::isnan(angle)) return 0;
  int deg = int(std::lrint(angle));
  deg %= 360;
  return deg < 0 ? deg + 360 : deg;
}

// The EXIF orientation that performs a clockwise rotation (exif::apply_orientation).
int exif_for_rotation(int degrees) { return degrees == 90 ? 6 : degrees == 180 ? 3 : degrees == 270 ? 8 : 1; }

std::string name_or_unknown(const char* s) { return s ? s : "unknown"; }

}  // namespace

std::string DecodeDamage::describe() const {
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : ", ") + part; };
  if (rejected_packets) add(std::to_string(rejected_packets) + " packets rejected by the decoder");
  if (corrupt_frames) add(std::to_string(corrupt_frames) + " frames decoded with errors concealed");
  if (missing_frames) add(std::to_string(missing_frames) + " of the frames the container announces missing");
  if (!read_error.empty()) add("reading stopped early: " + read_error);
  if (logged_errors) add(std::to_string(logged_errors) + " errors logged by FFmpeg" +
                         (messages.empty() ? "" : " (first: " + messages.front() + ")"));
  return s;
}

struct VideoReader::Impl {
  std::string name;
  VideoReadOptions opt;
  MemorySource memory;
  AVIOContext* io = nullptr;  // custom I/O over `memory`
  AVFormatContext* ic = nullptr;
  CodecPtr dec;
  AVStream* st = nullptr;
  FramePtr decoded{av_frame_alloc()};
  PacketPtr pkt{av_packet_alloc()};
  Cv2Converter convert;
  Image stored;  // the frame as stored, before the rotation
  VideoInfo info;
  DecodeDamage damage;
  std::vector<PacketPtr> pending;  // other streams' packets since the last frame
  std::vector<char> copy_done;     // per stream: a cut's end reached
  bool demux_done = false, flushed = false, video_done = false;
  bool skip_video = false;         // read_other_streams(): video packets are dropped undecoded
  double t0 = 0, t1 = INFINITY;    // the cut, in seconds of the container's clock
  bool cut = false;
  int64_t start_offset_us = 0;
  int64_t frames = 0, discarded_packets = 0, last_pts = AV_NOPTS_VALUE;
  int first_w = 0, first_h = 0;

  ~Impl() {
    avformat_close_input(&ic);
    if (io) {
      av_freep(&io->buffer);
      avio_context_free(&io);
    }
  }

  static int interrupt(void* self) {
    const auto* c = static_cast<Impl*>(self)->opt.cancel;
    return c && c->load() ? 1 : 0;
  }
  void check_cancel() const {
    if (opt.cancel && opt.cancel->load()) throw Cancelled();
  }
  [[noreturn]] void fail(const std::string& why) const { throw Error(name + ": " + why); }

  void open(const char* url) {
    capture_ffmpeg_log();
    take_logged_errors(true);  // what an earlier input left
    ic = avformat_alloc_context();
    GPEN_CHECK(ic, name + ": out of memory");
    ic->interrupt_callback.callback = &Impl::interrupt;
    ic->interrupt_callback.opaque = this;
    if (io) {
      ic->pb = io;
      ic->flags |= AVFMT_FLAG_CUSTOM_IO;
    }
    int err = avformat_open_input(&ic, url, nullptr, nullptr);  // frees ic on failure
    check_cancel();
    if (err < 0) fail(av_error_text(err));
    err = avformat_find_stream_info(ic, nullptr);
    check_cancel();
    if (err < 0) fail("cannot read the streams' parameters: " + av_error_text(err));
    st = first_video_stream(ic);
    if (!st) fail("no video stream");
    drop_unnamed_color_fields(st->codecpar);
    const AVCodecParameters* par = st->codecpar;
    if (par->width <= 0 || par->height <= 0) fail("the video stream has no frame size");
    if (int64_t(par->width) * par->height > opt.max_pixels)
      fail("frames of " + std::to_string(par->width) + "x" + std::to_string(par->height) + " exceed --max-pixels " +
           std::to_string(opt.max_pixels));
    const AVCodec* codec = avcodec_find_decoder(par->codec_id);
    if (!codec) fail("FFmpeg has no decoder for " + name_or_unknown(avcodec_get_name(par->codec_id)));
    dec.reset(avcodec_alloc_context3(codec));
    GPEN_CHECK(dec, name + ": out of memory");
    err = avcodec_parameters_to_context(dec.get(), par);
    if (err < 0) fail(av_error_text(err));
    dec->thread_count = opt.threads > 0 ? opt.threads : std::min(16, int(std::max(1u, std::thread::hardware_concurrency())));
    dec->max_pixels = opt.max_pixels;
    dec->pkt_timebase = st->time_base;
    err = avcodec_open2(dec.get(), codec, nullptr);
    if (err < 0) fail("cannot open the " + std::string(codec->name) + " decoder: " + av_error_text(err));

    const int rot = opt.apply_orientation ? display_rotation(st) : 0;
    info.path = name;
    info.container = ic->iformat->name;
    info.codec = name_or_unknown(avcodec_get_name(par->codec_id));
    info.pix_fmt = name_or_unknown(av_get_pix_fmt_name(static_cast<AVPixelFormat>(par->format)));
    info.rotation = (rot == 90 || rot == 180 || rot == 270) ? rot : 0;
    info.stored_width = par->width;
    info.stored_height = par->height;
    info.width = info.rotation % 180 ? par->height : par->width;
    info.height = info.rotation % 180 ? par->width : par->height;
    info.fps = av_q2d(av_guess_frame_rate(ic, st, nullptr));
    info.duration_s = ic->duration > 0 ? double(ic->duration) / AV_TIME_BASE : 0;
    info.frames_announced = st->nb_frames;
    info.stream_index = st->index;
    info.time_base_num = st->time_base.num;
    info.time_base_den = st->time_base.den;
    info.color_range = name_or_unknown(av_color_range_name(par->color_range));
    info.color_primaries = name_or_unknown(av_color_primaries_name(par->color_primaries));
    info.color_trc = name_or_unknown(av_color_transfer_name(par->color_trc));
    info.color_space = name_or_unknown(av_color_space_name(par->color_space));

    copy_done.assign(ic->nb_streams, 0);
    const double stream_start = st->start_time == AV_NOPTS_VALUE ? 0 : seconds(st->start_time, st->time_base);
    cut = opt.start_s > 0 || opt.duration_s >= 0;
    if (opt.run_start_s > 0) start_offset_us = int64_t(std::llround((stream_start + opt.run_start_s) * AV_TIME_BASE));
    if (opt.start_s > 0) {
      t0 = stream_start + opt.start_s;
      if (opt.run_start_s < 0) start_offset_us = int64_t(std::llround(t0 * AV_TIME_BASE));
      const int64_t target = int64_t(std::llround(t0 / av_q2d(st->time_base)));
      if (av_seek_frame(ic, st->index, target, AVSEEK_FLAG_BACKWARD) < 0)
        fail("cannot seek to " + std::to_string(opt.start_s) + " s");
    } else {
      t0 = -INFINITY;
    }
    if (opt.duration_s >= 0) t1 = (opt.start_s > 0 ? t0 : stream_start) + opt.duration_s;
  }

  // A packet of another stream: kept for the writer unless a cut leaves it out.
  void keep_copy() {
    if (!opt.other_streams) {
      av_packet_unref(pkt.get());
      return;
    }
    const AVStream* s = ic->streams[pkt->stream_index];
    const int64_t ts = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
    if (cut && ts != AV_NOPTS_VALUE) {
      const double t = seconds(ts, s->time_base);
      if (t >= t1) copy_done[pkt->stream_index] = 1;
      if (t < t0 || t >= t1) {
        av_packet_unref(pkt.get());
        return;
      }
    }
    PacketPtr p(av_packet_alloc());
    av_packet_move_ref(p.get(), pkt.get());
    pending.push_back(std::move(p));
  }

  // After the video of a cut has ended: the other streams up to the cut's end.
  bool copies_pending() const {
    if (!cut || demux_done) return false;
    for (unsigned i = 0; i < ic->nb_streams; ++i)
      if (int(i) != st->index && !copy_done[i]) return true;
    return false;
  }

  // Feeds the decoder (or collects other streams' packets); false when nothing is left to read.
  bool demux_one() {
    const int r = av_read_frame(ic, pkt.get());
    check_cancel();
    if (r == AVERROR(EAGAIN)) return true;
    if (r < 0) {
      if (r != AVERROR_EOF) damage.read_error = av_error_text(r);
      demux_done = true;
      return false;
    }
    if (pkt->stream_index != st->index) {
      keep_copy();
      return true;
    }
    if (video_done || skip_video) {
      av_packet_unref(pkt.get());
      return true;
    }
    if (pkt->flags & AV_PKT_FLAG_DISCARD) ++discarded_packets;
    const int s = avcodec_send_packet(dec.get(), pkt.get());
    av_packet_unref(pkt.get());
    if (s < 0 && s != AVERROR(EAGAIN) && s != AVERROR_EOF) ++damage.rejected_packets;
    return true;
  }

  // The decoded frame, if the cut keeps it, into `fr`.
  bool take_frame(VideoFrame& fr) {
    const AVFrame* f = decoded.get();
    if ((f->flags & AV_FRAME_FLAG_CORRUPT) || f->decode_error_flags) ++damage.corrupt_frames;
    int64_t pts = f->pts != AV_NOPTS_VALUE ? f->pts : f->best_effort_timestamp;
    if (pts == AV_NOPTS_VALUE || (last_pts != AV_NOPTS_VALUE && pts <= last_pts))
      pts = last_pts == AV_NOPTS_VALUE ? 0 : last_pts + std::max<int64_t>(1, f->pkt_duration);
    const double t = seconds(pts, st->time_base);
    if (t >= t1) {
      video_done = true;
      return false;
    }
    if (t < t0) return false;
    last_pts = pts;
    if (frames == 0) {
      first_w = f->width;
      first_h = f->height;
    } else if (f->width != first_w || f->height != first_h) {
      fail("the frame size changes at frame " + std::to_string(frames) + " (" + std::to_string(first_w) + "x" +
           std::to_string(first_h) + " to " + std::to_string(f->width) + "x" + std::to_string(f->height) +
           "), which is not supported");
    }
    const AVCodecParameters* par = st->codecpar;
    if (info.rotation == 0) {
      convert.convert(f, dec->coded_width, dec->coded_height, par->width, par->height, fr.image);
    } else {
      convert.convert(f, dec->coded_width, dec->coded_height, par->width, par->height, stored);
      fr.image = exif::apply_orientation(stored, exif_for_rotation(info.rotation));
    }
    fr.index = frames++;
    fr.pts = pts;
    fr.duration = f->pkt_duration;
    fr.time_s = t - (st->start_time == AV_NOPTS_VALUE ? 0 : seconds(st->start_time, st->time_base));
    fr.faces = 0;
    fr.end = false;
    return true;
  }

  bool read_other_streams(std::vector<PacketPtr>& out) {
    out.clear();
    skip_video = true;
    // A cut ends when every other stream has passed its end; the whole file at the demuxer's end.
    while (pending.empty()) {
      if (demux_done || !opt.other_streams || (cut && !copies_pending())) return false;
      demux_one();
    }
    out = std::move(pending);
    pending.clear();
    return true;
  }

  bool read(VideoFrame& fr) {
    fr.copied.clear();
    while (!video_done) {
      check_cancel();
      const int r = avcodec_receive_frame(dec.get(), decoded.get());
      if (r == 0) {
        const bool kept = take_frame(fr);
        av_frame_unref(decoded.get());
        if (kept) {
          fr.copied = std::move(pending);
          pending.clear();
          return true;
        }
        continue;
      }
      if (r == AVERROR_EOF) {
        video_done = true;
        break;
      }
      if (r != AVERROR(EAGAIN)) ++damage.rejected_packets;  // a decode error surfaced here: go on
      if (!demux_done) {
        demux_one();
      } else if (!flushed) {
        avcodec_send_packet(dec.get(), nullptr);
        flushed = true;
      } else {
        video_done = true;
      }
    }
    while (copies_pending()) demux_one();
    if (!cut && damage.read_error.empty() && info.frames_announced > 0) {
      const int64_t expected = info.frames_announced - discarded_packets;
      damage.missing_frames = std::max<int64_t>(0, expected - frames);
    }
    LoggedErrors logged = take_logged_errors(true);
    damage.logged_errors += logged.count;
    for (auto& m : logged.first) damage.messages.push_back(std::move(m));
    fr.end = true;
    fr.copied = std::move(pending);
    pending.clear();
    return false;
  }
};

VideoReader::VideoReader(const std::string& path, const VideoReadOptions& opt) : impl_(std::make_unique<Impl>()) {
  impl_->name = path;
  impl_->opt = opt;
  impl_->open(path.c_str());
}

VideoReader::VideoReader(const uint8_t* data, size_t size, const std::string& name, const VideoReadOptions& opt)
    : impl_(std::make_unique<Impl>()) {
  impl_->name = name;
  impl_->opt = opt;
  impl_->memory = {data, size, 0};
  constexpr int kBuffer = 1 << 16;
  auto* buffer = static_cast<uint8_t*>(av_malloc(kBuffer));
  GPEN_CHECK(buffer, name + ": out of memory");
  impl_->io = avio_alloc_context(buffer, kBuffer, 0, &impl_->memory, memory_read, nullptr, memory_seek);
  if (!impl_->io) av_free(buffer);
  GPEN_CHECK(impl_->io, name + ": out of memory");
  impl_->open(nullptr);
}

VideoReader::~VideoReader() = default;
const VideoInfo& VideoReader::info() const { return impl_->info; }
bool VideoReader::read(VideoFrame& frame) { return impl_->read(frame); }
bool VideoReader::read_other_streams(std::vector<PacketPtr>& packets) { return impl_->read_other_streams(packets); }
int64_t VideoReader::frames_read() const { return impl_->frames; }
const DecodeDamage& VideoReader::damage() const { return impl_->damage; }
const AVFormatContext* VideoReader::format() const { return impl_->ic; }
int64_t VideoReader::start_offset_us() const { return impl_->start_offset_us; }
bool VideoReader::other_streams() const { return impl_->opt.other_streams; }

}  // namespace gpen::video
