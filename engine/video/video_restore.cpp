#include "engine/video/video_restore.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "engine/core/error.h"
#include "engine/photo/facexlib_flow.h"
#include "engine/video/video_report.h"

namespace fs = std::filesystem;

namespace gpen::video {
namespace {

// Frames handed to the Restorer at once: their faces fill GPEN's batches, and each costs one
// decoded frame more in the pipeline's pool (engine/video/video_pipeline.h), so no more than the
// planned batch of faces can use, and no more than 8 (beyond that a 4K frame pool outgrows the
// arena it feeds).
constexpr int kMaxFramesPerCall = 8;

}  // namespace

RestoreFrames::RestoreFrames(Restorer& restorer, int smooth) : r_(&restorer) {
  // The facexlib flows align each face by its own detection, as their scripts do per frame.
  GPEN_CHECK(smooth == 0 || restorer.flow() == FaceFlow::gpen,
             "--smooth (landmarks averaged along face tracks) is an option of GPEN models; " + restorer.config().model +
                 " is a " + face_flow_name(restorer.flow()) +
                 " model, whose flow aligns every frame's faces by their own landmarks");
  if (smooth > 0) tracks_.emplace(smooth);
}

int RestoreFrames::max_frames() const { return std::clamp(r_->plan().split.batch, 1, kMaxFramesPerCall); }

std::pair<int, int> RestoreFrames::output_size(int width, int height) const {
  // Background super-resolution (GPEN) or the facexlib flows' upsizing and upscale (their
  // background upsampler's output is resized to that).
  if (FacexlibRestorer* f = r_->facexlib()) return f->output_size(width, height);
  const int s = r_->sr_model() ? r_->sr_model()->config().scale : 1;
  return {width * s, height * s};
}

void RestoreFrames::process(std::span<VideoFrame* const> frames) {
  std::vector<ImageView> views;
  views.reserve(frames.size());
  for (const VideoFrame* f : frames) views.push_back(f->image);
  // The frames come in display order, and the Restorer hands over their detections in the order
  // of the frames: the tracks see the video frame after frame.
  FaceAdjust smooth;
  if (tracks_) smooth = [this](size_t, std::vector<Face>& faces) { tracks_->next_frame(faces); };
  std::vector<RestoreResult> done = r_->restore(views, {}, smooth);
  for (size_t i = 0; i < frames.size(); ++i) {
    frames[i]->image = std::move(done[i].image);
    frames[i]->faces = done[i].restored;
  }
}

std::string RestoreFrames::describe() const {
  const RestorePlan& p = r_->plan();
  if (FacexlibRestorer* f = r_->facexlib()) {
    std::string s = std::string(face_flow_name(r_->flow())) + " " + std::to_string(p.size) + "x" +
                    std::to_string(p.size) + " on " + p.device + " (" + p.precision + "), one face per run, " +
                    f->rules().name + " frame by frame";
    if (r_->config().upscale > 1) s += ", upscale " + std::to_string(r_->config().upscale);
    if (p.mask == "parse") s += ", face-parsing paste mask";
    return s;
  }
  std::string s = "GPEN " + std::to_string(p.size) + "x" + std::to_string(p.size) + " on " + p.device + " (" +
                  p.precision + "), up to " + std::to_string(p.split.batch) + " faces per run from up to " +
                  std::to_string(max_frames()) + " frames";
  if (p.split.banded) s += ", banded";
  if (p.mask == "parse") s += ", face-parsing paste mask";
  if (!p.sr_model.empty()) s += ", background " + p.sr_model;
  if (tracks_) s += ", landmarks averaged over " + std::to_string(tracks_->window()) + " frames per face track";
  return s;
}

size_t RestoreFrames::planned_bytes() const {
  const nlohmann::json m = r_->memory_json();
  size_t total = m["weights_bytes"].get<size_t>() + m["workspace_bytes"].get<size_t>() +
                 m["shared_arena_bytes"].get<size_t>() + m["parsenet_weights_bytes"].get<size_t>() +
                 m["pipeline_buffer_bytes"].get<size_t>();
  if (!m["detector_in_generator_arena"].get<bool>()) total += m["detector_arena_bytes"].get<size_t>();
  if (!m["parsenet_in_generator_arena"].get<bool>())
    total += m["parsenet_arena_bytes"].get<size_t>() + m["parsenet_workspace_bytes"].get<size_t>();
  // RealESRNet's weights, arena and tile at most (GPEN's budget split), or the facexlib flows'
  // background upsampler as its tiles needed it.
  if (r_->sr_model()) total += m.contains("sr_bytes") ? m["sr_bytes"].get<size_t>() : r_->plan().split.sr_budget;
  return total;
}

nlohmann::json RestoreFrames::memory() const {
  nlohmann::json m = r_->memory_json();
  m["plan"] = to_json(r_->plan());
  m["planned_bytes"] = planned_bytes();
  return m;
}

void RestoreFrames::start_video() {
  if (tracks_) tracks_->reset();
}

nlohmann::json RestoreFrames::smoothing() const {
  if (!tracks_) return nullptr;
  const LandmarkJitter j = tracks_->jitter();
  return {{"frames", tracks_->window()},
          {"tracks", tracks_->tracks_started()},
          {"landmark_jitter_px", {{"detected", j.detected_px}, {"smoothed", j.smoothed_px}, {"steps", j.steps}}}};
}

nlohmann::json restore_video(RestoreFrames& restorer, const VideoJob& job) {
  VideoReadOptions ro = job.read;
  ro.cancel = job.cancel;
  VideoReader reader(job.input, ro);
  const VideoInfo& info = reader.info();
  const auto [w, h] = restorer.output_size(info.width, info.height);
  fs::create_directories(fs::absolute(job.output).parent_path());
  VideoWriter writer(reader, job.output, job.encode, w, h);
  if (job.writing) job.writing(writer.temp_path());
  PipelineOptions po;
  po.cancel = job.cancel;
  po.progress = job.progress;
  restorer.start_video();
  const PipelineStats stats = run_pipeline(reader, restorer, writer, po);
  if (job.writing) job.writing("");
  return video_report(job.input, job.output, reader, writer, stats, restorer);
}

}  // namespace gpen::video
