#include "engine/video/video_writer.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <vector>

extern "C" {
#include <libavutil/pixdesc.h>
}

#include "engine/core/error.h"
#include "engine/photo/exif.h"
#include "engine/video/av_util.h"

namespace fs = std::filesystem;

namespace gpen::video {
namespace {

// The EXIF orientation that undoes a clockwise rotation by `degrees` (exif::apply_orientation).
int exif_undoing_rotation(int degrees) { return degrees == 90 ? 8 : degrees == 180 ? 3 : degrees == 270 ? 6 : 1; }

// As the ffmpeg program decides: keep the input's codec tag where the output container maps it to
// the same codec, or where the container has no tag table; otherwise let the muxer choose.
uint32_t copied_codec_tag(const AVOutputFormat* ofmt, const AVCodecParameters* par) {
  if (!ofmt->codec_tag) return par->codec_tag;
  if (av_codec_get_id(ofmt->codec_tag, par->codec_tag) == par->codec_id) return par->codec_tag;
  unsigned tag = 0;
  return av_codec_get_tag2(ofmt->codec_tag, par->codec_id, &tag) ? 0 : par->codec_tag;
}

// The muxers that store a stream's display matrix (FFmpeg 5.1: the mov/mp4 family's).
bool stores_display_matrix(const AVOutputFormat* f) {
  for (const char* name : {"mov", "mp4", "3gp", "3g2", "psp", "ipod", "ismv", "f4v"})
    if (std::strcmp(f->name, name) == 0) return true;
  return false;
}

void copy_side_data(const AVStream* from, AVStream* to, bool with_display_matrix = true) {
  for (int i = 0; i < from->nb_side_data; ++i) {
    const AVPacketSideData& sd = from->side_data[i];
    if (sd.type == AV_PKT_DATA_DISPLAYMATRIX && !with_display_matrix) continue;
    uint8_t* dst = av_stream_new_side_data(to, sd.type, sd.size);
    GPEN_CHECK(dst, "out of memory");
    std::memcpy(dst, sd.data, sd.size);
  }
}

// Why an encoder or muxer call failed: what it logged (a codec the container cannot hold, an
// option out of range), without the "[mp4 @ 0x55...] " context, or else the error code's text.
std::string reason(int err) {
  const LoggedErrors logged = take_logged_errors(false);
  if (logged.first.empty()) return av_error_text(err);
  const std::string& m = logged.first.front();
  const size_t at = m.find("] ");
  return m[0] == '[' && at != std::string::npos ? m.substr(at + 2) : m;
}

std::string name_or_none(const char* s) { return s ? s : "none"; }

}  // namespace

struct VideoWriter::Impl {
  std::string path, temp;
  const VideoReader& in;
  const AVFormatContext* ic;
  const AVStream* ist = nullptr;
  AVFormatContext* oc = nullptr;
  AVStream* ost = nullptr;
  CodecPtr enc;
  EncoderChoice choice;
  FramePtr yuv;
  SwsPtr sws;
  PacketPtr pkt{av_packet_alloc()};
  std::vector<int> out_index;             // input stream -> output stream (-1: not written)
  std::map<int64_t, int64_t> durations;   // frame pts -> duration, until its packet is written
  int rotation = 0, frame_w = 0, frame_h = 0;  // rotation: what write_frame undoes
  bool drop_display_matrix = false;
  std::string orientation;
  int64_t written = 0;
  bool finished = false;

  Impl(const VideoReader& r, const std::string& p) : path(p), in(r), ic(r.format()) {}

  ~Impl() {
    if (oc && oc->pb && !(oc->oformat->flags & AVFMT_NOFILE)) avio_closep(&oc->pb);
    if (!finished && !temp.empty()) std::remove(temp.c_str());
    avformat_free_context(oc);
  }

  [[noreturn]] void fail(const std::string& why) const { throw Error(path + ": " + why); }

  int64_t offset_in(AVRational tb) const { return av_rescale_q(in.start_offset_us(), AV_TIME_BASE_Q, tb); }

  // encoded: a join's video stream, copied instead of encoded (then `s`, width and height unused).
  void open(const EncodeSettings& s, int width, int height, const AVStream* encoded = nullptr) {
    capture_ffmpeg_log();
    const VideoInfo& info = in.info();
    ist = ic->streams[info.stream_index];
    frame_w = width;
    frame_h = height;
    int err = avformat_alloc_output_context2(&oc, nullptr, nullptr, path.c_str());
    if (err < 0 || !oc) fail("FFmpeg has no container format for this file name (" + av_error_text(err) + ")");
    // Frames turned back to the stored orientation under the kept display matrix, or, where the
    // container has no place for one, written upright without it.
    rotation = stores_display_matrix(oc->oformat) ? info.rotation : 0;
    drop_display_matrix = info.rotation && !rotation;
    if (drop_display_matrix)
      orientation = "frames written upright: the " + std::string(oc->oformat->name) +
                    " container cannot store the input's rotation of " + std::to_string(info.rotation) + " degrees";
    else if (info.rotation)
      orientation = "rotation of " + std::to_string(info.rotation) + " degrees kept in the display matrix";
    if (encoded) {
      choice.encoder = "copy";
      choice.pix_fmt = name_or_none(av_get_pix_fmt_name(static_cast<AVPixelFormat>(encoded->codecpar->format)));
      choice.rule = "segments joined: " + name_or_none(avcodec_get_name(encoded->codecpar->codec_id)) + " copied";
    } else {
      choice = choose_encoder(ist->codecpar->codec_id, static_cast<AVPixelFormat>(ist->codecpar->format), s);
    }

    out_index.assign(ic->nb_streams, -1);
    for (unsigned i = 0; i < ic->nb_streams; ++i) {
      const AVStream* is = ic->streams[i];
      if (is == ist) {
        if (encoded)
          add_encoded_stream(encoded);
        else
          open_encoder(s);
        continue;
      }
      if (!in.other_streams()) continue;
      const AVMediaType type = is->codecpar->codec_type;
      if (type != AVMEDIA_TYPE_AUDIO && type != AVMEDIA_TYPE_SUBTITLE && type != AVMEDIA_TYPE_DATA &&
          type != AVMEDIA_TYPE_VIDEO && type != AVMEDIA_TYPE_ATTACHMENT)
        continue;
      if (is->codecpar->codec_id == AV_CODEC_ID_NONE) continue;  // nothing FFmpeg could name can be muxed
      AVStream* os = avformat_new_stream(oc, nullptr);
      GPEN_CHECK(os, "out of memory");
      err = avcodec_parameters_copy(os->codecpar, is->codecpar);
      if (err < 0) fail(av_error_text(err));
      os->codecpar->codec_tag = copied_codec_tag(oc->oformat, is->codecpar);
      os->time_base = is->time_base;
      os->avg_frame_rate = is->avg_frame_rate;
      os->r_frame_rate = is->r_frame_rate;
      os->sample_aspect_ratio = is->sample_aspect_ratio;
      os->disposition = is->disposition;
      av_dict_copy(&os->metadata, is->metadata, 0);
      copy_side_data(is, os);
      out_index[i] = os->index;
    }
    av_dict_copy(&oc->metadata, ic->metadata, 0);
    av_dict_set(&oc->metadata, "encoder", LIBAVFORMAT_IDENT, 0);
    copy_chapters();

    std::string hidden = ".";
    hidden += fs::path(path).filename().string();
    hidden += ".partial-" + std::to_string(getpid());
    temp = (fs::path(path).parent_path() / hidden).string();
    if (!(oc->oformat->flags & AVFMT_NOFILE)) {
      err = avio_open(&oc->pb, temp.c_str(), AVIO_FLAG_WRITE);
      if (err < 0) fail("cannot write " + temp + ": " + av_error_text(err));
    }
    take_logged_errors(false);
    err = avformat_write_header(oc, nullptr);
    if (err < 0)
      fail("the " + std::string(oc->oformat->name) + " container refuses these streams: " + reason(err) +
           " (choose another --codec or an output file type that can hold them, e.g. .mkv)");
  }

  void open_encoder(const EncodeSettings& s) {
    const AVCodec* codec = avcodec_find_encoder_by_name(choice.encoder.c_str());
    enc.reset(avcodec_alloc_context3(codec));
    GPEN_CHECK(enc, "out of memory");
    const AVCodecParameters* par = ist->codecpar;
    const AVPixelFormat fmt = av_get_pix_fmt(choice.pix_fmt.c_str());
    const bool rgb = av_pix_fmt_desc_get(fmt)->flags & AV_PIX_FMT_FLAG_RGB;
    enc->width = rotation % 180 ? frame_h : frame_w;
    enc->height = rotation % 180 ? frame_w : frame_h;
    enc->pix_fmt = fmt;
    enc->time_base = ist->time_base;
    const AVRational rate = av_guess_frame_rate(const_cast<AVFormatContext*>(ic), const_cast<AVStream*>(ist), nullptr);
    if (rate.num > 0 && rate.den > 0) enc->framerate = rate;
    enc->sample_aspect_ratio =
        av_guess_sample_aspect_ratio(const_cast<AVFormatContext*>(ic), const_cast<AVStream*>(ist), nullptr);
    enc->color_range = par->color_range;
    enc->color_primaries = par->color_primaries;
    enc->color_trc = par->color_trc;
    enc->colorspace = rgb ? AVCOL_SPC_RGB : par->color_space;
    enc->chroma_sample_location = par->chroma_location;
    enc->thread_count = s.threads;
    if (oc->oformat->flags & AVFMT_GLOBALHEADER) enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    AVDictionary* opts = nullptr;
    for (const auto& [k, v] : choice.options) av_dict_set(&opts, k.c_str(), v.c_str(), 0);
    take_logged_errors(false);
    const int err = avcodec_open2(enc.get(), codec, &opts);
    const AVDictionaryEntry* unused = av_dict_get(opts, "", nullptr, AV_DICT_IGNORE_SUFFIX);
    const std::string unused_name = unused ? unused->key : "";
    av_dict_free(&opts);
    if (err < 0) fail("cannot open the encoder " + choice.encoder + ": " + reason(err));
    if (!unused_name.empty()) fail("the encoder " + choice.encoder + " has no option " + unused_name);

    ost = avformat_new_stream(oc, nullptr);
    GPEN_CHECK(ost, "out of memory");
    if (avcodec_parameters_from_context(ost->codecpar, enc.get()) < 0) fail("out of memory");
    ost->time_base = enc->time_base;
    ost->avg_frame_rate = ist->avg_frame_rate;
    ost->sample_aspect_ratio = enc->sample_aspect_ratio;
    ost->disposition = ist->disposition;
    av_dict_copy(&ost->metadata, ist->metadata, 0);
    av_dict_set(&ost->metadata, "encoder", (std::string(LIBAVCODEC_IDENT) + " " + choice.encoder).c_str(), 0);
    copy_side_data(ist, ost, !drop_display_matrix);  // the display matrix (rotation) among them
    out_index[ist->index] = ost->index;

    yuv.reset(av_frame_alloc());
    yuv->format = fmt;
    yuv->width = enc->width;
    yuv->height = enc->height;
    yuv->color_range = enc->color_range;
    yuv->color_primaries = enc->color_primaries;
    yuv->color_trc = enc->color_trc;
    yuv->colorspace = enc->colorspace;
    yuv->chroma_location = enc->chroma_sample_location;
    GPEN_CHECK(av_frame_get_buffer(yuv.get(), 0) == 0, "out of memory");
    // The inverse of the reader's conversion (libswscale's default BT.601 matrix and range), so
    // that what the processing step left alone comes back as it was decoded.
    sws.reset(sws_getContext(enc->width, enc->height, AV_PIX_FMT_BGR24, enc->width, enc->height, fmt,
                             SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INP, nullptr, nullptr, nullptr));
    if (!sws) fail("libswscale cannot convert BGR to " + choice.pix_fmt);
  }

  // A join's video stream: what the writer set on the segments' (from this same input), kept.
  void add_encoded_stream(const AVStream* e) {
    ost = avformat_new_stream(oc, nullptr);
    GPEN_CHECK(ost, "out of memory");
    if (avcodec_parameters_copy(ost->codecpar, e->codecpar) < 0) fail("out of memory");
    ost->codecpar->codec_tag = copied_codec_tag(oc->oformat, e->codecpar);
    ost->time_base = ist->time_base;  // asked for as when encoding, so the muxer picks the segments' own
    ost->avg_frame_rate = ist->avg_frame_rate;
    ost->sample_aspect_ratio = e->sample_aspect_ratio;
    ost->disposition = ist->disposition;
    av_dict_copy(&ost->metadata, e->metadata, 0);
    copy_side_data(e, ost);
    out_index[ist->index] = ost->index;
  }

  void write_encoded(AVPacket* p, AVRational tb) {
    p->stream_index = ost->index;
    p->pos = -1;
    av_packet_rescale_ts(p, tb, ost->time_base);
    ++written;
    mux(p);
  }

  void copy_chapters() {
    const int64_t shift = in.start_offset_us();
    for (unsigned i = 0; i < ic->nb_chapters; ++i) {
      const AVChapter* c = ic->chapters[i];
      const int64_t off = av_rescale_q(shift, AV_TIME_BASE_Q, c->time_base);
      if (c->end <= off) continue;
      auto* out = static_cast<AVChapter*>(av_mallocz(sizeof(AVChapter)));
      GPEN_CHECK(out, "out of memory");
      *out = {};
      out->id = c->id;
      out->time_base = c->time_base;
      out->start = std::max<int64_t>(0, c->start - off);
      out->end = c->end - off;
      av_dict_copy(&out->metadata, c->metadata, 0);
      auto** grown = static_cast<AVChapter**>(av_realloc_f(oc->chapters, oc->nb_chapters + 1, sizeof(AVChapter*)));
      GPEN_CHECK(grown, "out of memory");
      oc->chapters = grown;
      oc->chapters[oc->nb_chapters++] = out;
    }
  }

  void mux(AVPacket* p) {
    const int err = av_interleaved_write_frame(oc, p);
    if (err < 0) fail("cannot write a packet: " + av_error_text(err));
  }

  void write_copied(AVPacket* p) {
    const int o = p->stream_index < int(out_index.size()) ? out_index[p->stream_index] : -1;
    if (o < 0 || o == ost->index) return;
    const AVRational tb = ic->streams[p->stream_index]->time_base;
    const int64_t off = offset_in(tb);
    if (p->pts != AV_NOPTS_VALUE) p->pts -= off;
    if (p->dts != AV_NOPTS_VALUE) p->dts -= off;
    p->stream_index = o;
    p->pos = -1;
    av_packet_rescale_ts(p, tb, oc->streams[o]->time_base);
    mux(p);
  }

  void drain() {
    for (;;) {
      const int r = avcodec_receive_packet(enc.get(), pkt.get());
      if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return;
      if (r < 0) fail("the encoder " + choice.encoder + " failed: " + av_error_text(r));
      if (pkt->duration == 0) {
        auto d = durations.find(pkt->pts);
        if (d != durations.end()) pkt->duration = d->second;
      }
      durations.erase(pkt->pts);
      pkt->stream_index = ost->index;
      av_packet_rescale_ts(pkt.get(), enc->time_base, ost->time_base);
      mux(pkt.get());
    }
  }

  void write_frame(const VideoFrame& f) {
    GPEN_CHECK(f.image.width == frame_w && f.image.height == frame_h,
               path + ": a frame of " + std::to_string(f.image.width) + "x" + std::to_string(f.image.height) +
                   " in a video of " + std::to_string(frame_w) + "x" + std::to_string(frame_h));
    Image stored;
    const Image* src = &f.image;
    if (rotation) {
      stored = exif::apply_orientation(f.image, exif_undoing_rotation(rotation));
      src = &stored;
    }
    GPEN_CHECK(av_frame_make_writable(yuv.get()) == 0, "out of memory");
    const uint8_t* planes[4] = {src->bgr.data(), nullptr, nullptr, nullptr};
    const int strides[4] = {src->width * 3, 0, 0, 0};
    sws_scale(sws.get(), planes, strides, 0, src->height, yuv->data, yuv->linesize);
    yuv->pts = f.pts - offset_in(enc->time_base);
    yuv->pkt_duration = f.duration;
    if (f.duration > 0) durations[yuv->pts] = f.duration;
    const int err = avcodec_send_frame(enc.get(), yuv.get());
    if (err < 0) fail("the encoder " + choice.encoder + " refused a frame: " + av_error_text(err));
    ++written;
    drain();
  }

  void finish() {
    GPEN_CHECK(!finished, path + ": finished twice");
    if (enc) {
      avcodec_send_frame(enc.get(), nullptr);
      drain();
    }
    int err = av_write_trailer(oc);
    if (err < 0) fail("cannot finalise the container: " + av_error_text(err));
    if (!(oc->oformat->flags & AVFMT_NOFILE)) {
      err = avio_closep(&oc->pb);
      if (err < 0) fail("cannot write " + temp + ": " + av_error_text(err));
    }
    std::error_code ec;
    fs::rename(temp, path, ec);
    if (ec) fail("cannot rename " + temp + " to it: " + ec.message());
    finished = true;
  }
};

VideoWriter::VideoWriter(const VideoReader& in, const std::string& path, const EncodeSettings& settings, int width,
                         int height)
    : impl_(std::make_unique<Impl>(in, path)) {
  impl_->open(settings, width, height);
}

VideoWriter::VideoWriter(const VideoReader& in, const std::string& path, const AVStream* encoded)
    : impl_(std::make_unique<Impl>(in, path)) {
  impl_->open({}, 0, 0, encoded);
}

VideoWriter::~VideoWriter() = default;
const EncoderChoice& VideoWriter::choice() const { return impl_->choice; }

void VideoWriter::write(VideoFrame& frame) {
  for (auto& p : frame.copied) impl_->write_copied(p.get());
  frame.copied.clear();
  if (!frame.end) impl_->write_frame(frame);
}

void VideoWriter::write_encoded(AVPacket* packet, AVRational time_base) { impl_->write_encoded(packet, time_base); }

void VideoWriter::write_copied(AVPacket* packet) { impl_->write_copied(packet); }

void VideoWriter::finish() { impl_->finish(); }
const std::string& VideoWriter::temp_path() const { return impl_->temp; }
const std::string& VideoWriter::orientation() const { return impl_->orientation; }
int64_t VideoWriter::frames_written() const { return impl_->written; }

}  // namespace gpen::video
