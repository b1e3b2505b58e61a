#include "engine/video/video_report.h"

#include <cstdio>

#include "engine/core/rss.h"

namespace gpen::video {

nlohmann::json video_report(const std::string& input, const std::string& output, const VideoReader& reader,
                            const VideoWriter& writer, const PipelineStats& stats, const RestoreFrames& restorer) {
  const VideoInfo& in = reader.info();
  const DecodeDamage& d = reader.damage();
  const EncoderChoice& enc = writer.choice();
  nlohmann::json options = nlohmann::json::object();
  for (const auto& [k, v] : enc.options) options[k] = v;
  const size_t queues = size_t(stats.frames_in_flight) * stats.frame_bytes;
  return {
      {"video", input},
      {"output", output},
      {"frames", stats.frames},
      {"faces", stats.faces},
      {"fps", stats.fps()},
      {"faces_per_s", stats.faces_per_s()},
      {"times_s",
       {{"wall", stats.wall_s}, {"decode", stats.decode_s}, {"restore", stats.process_s}, {"encode", stats.encode_s}}},
      {"input",
       {{"container", in.container},
        {"codec", in.codec},
        {"pix_fmt", in.pix_fmt},
        {"width", in.width},
        {"height", in.height},
        {"rotation", in.rotation},
        {"fps", in.fps},
        {"frames_announced", in.frames_announced},
        {"color", {{"range", in.color_range}, {"primaries", in.color_primaries}, {"transfer", in.color_trc},
                   {"space", in.color_space}}}}},
      {"encoding",
       {{"encoder", enc.encoder},
        {"pix_fmt", enc.pix_fmt},
        {"options", options},
        {"rule", enc.rule},
        {"orientation", writer.orientation()}}},
      {"decode_errors",
       {{"any", d.any()},
        {"summary", d.describe()},
        {"rejected_packets", d.rejected_packets},
        {"corrupt_frames", d.corrupt_frames},
        {"missing_frames", d.missing_frames},
        {"read_error", d.read_error},
        {"logged_errors", d.logged_errors},
        {"messages", d.messages}}},
      {"memory",
       {{"frames_in_flight", stats.frames_in_flight},
        {"frame_bytes", stats.frame_bytes},
        {"queue_bytes", queues},
        {"restorer", restorer.memory()},
        {"planned_bytes", restorer.planned_bytes() + queues}}},
      {"smooth", restorer.smoothing()},
      {"peak_rss_mib", peak_rss_mib()}};
}

std::string video_summary(const nlohmann::json& r) {
  char line[160];
  std::snprintf(line, sizeof line, ": %lld frames, %lld faces, %.1f fps -> ", r["frames"].get<long long>(),
                r["faces"].get<long long>(), r["fps"].get<double>());
  return r["video"].get<std::string>() + line + r["output"].get<std::string>() + "; " +
         r["encoding"]["rule"].get<std::string>();
}

std::string video_report_file(const nlohmann::json& videos) {
  long long frames = 0, faces = 0, failed = 0, damaged = 0;
  double wall = 0;
  for (const auto& v : videos) {
    if (v.contains("error")) {
      ++failed;
      continue;
    }
    frames += v["frames"].get<long long>();
    faces += v["faces"].get<long long>();
    wall += v["times_s"]["wall"].get<double>();
    damaged += v["decode_errors"]["any"].get<bool>();
  }
  const nlohmann::json report = {
      {"videos", videos},
      {"totals",
       {{"videos", videos.size()},
        {"failed", failed},
        {"damaged", damaged},
        {"frames", frames},
        {"faces", faces},
        {"fps", wall > 0 ? frames / wall : 0.0},
        {"faces_per_s", wall > 0 ? faces / wall : 0.0},
        {"peak_rss_mib", peak_rss_mib()}}}};
  return report.dump(2);
}

}  // namespace gpen::video
