// `gpen video`'s processing step over the engine's Restorer (apps/video_restore.h).
#include "apps/video_restore.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "engine/photo/face_tracks.h"
#include "engine/photo/restorer.h"

namespace gpen::cli {
namespace {

using namespace restore_detail;

// Frames handed to the Restorer at once: their faces fill GPEN's batches, and each costs one
// decoded frame more in the pipeline's pool (engine/video/video_pipeline.h), so no more than the
// planned batch of faces can use, and no more than 8 (beyond that a 4K frame pool outgrows the
// arena it feeds).
constexpr int kMaxFramesPerCall = 8;

class FramesThroughRestorer final : public VideoRestorer {
 public:
  FramesThroughRestorer(const RestoreArgs& a, int smooth) : restorer_(Restorer::open(restore_config(a))) {
    if (smooth > 0) tracks_.emplace(smooth);
  }

  int max_frames() const override { return std::clamp(restorer_->plan().split.batch, 1, kMaxFramesPerCall); }

  std::pair<int, int> output_size(int width, int height) const override {
    const int s = restorer_->sr_model() ? restorer_->sr_model()->config().scale : 1;
    return {width * s, height * s};
  }

  void process(std::span<video::VideoFrame* const> frames) override {
    std::vector<ImageView> views;
    views.reserve(frames.size());
    for (const video::VideoFrame* f : frames) views.push_back(f->image);
    // The frames come in display order, and the Restorer hands over their detections in the
    // order of the frames: the tracks see the video frame after frame.
    FaceAdjust smooth;
    if (tracks_) smooth = [this](size_t, std::vector<Face>& faces) { tracks_->next_frame(faces); };
    std::vector<RestoreResult> done = restorer_->restore(views, {}, smooth);
    for (size_t i = 0; i < frames.size(); ++i) {
      frames[i]->image = std::move(done[i].image);
      frames[i]->faces = done[i].restored;
    }
  }

  std::string describe() const override {
    const RestorePlan& p = restorer_->plan();
    std::string s = "GPEN " + std::to_string(p.size) + "x" + std::to_string(p.size) + " on " + p.device + " (" +
                    p.precision + "), up to " + std::to_string(p.split.batch) + " faces per run from up to " +
                    std::to_string(max_frames()) + " frames";
    if (p.split.banded) s += ", banded";
    if (p.mask == "parse") s += ", face-parsing paste mask";
    if (!p.sr_model.empty()) s += ", background " + p.sr_model;
    if (tracks_) s += ", landmarks averaged over " + std::to_string(tracks_->window()) + " frames per face track";
    return s;
  }

  size_t planned_bytes() const override {
    const nlohmann::json m = restorer_->memory_json();
    size_t total = m["weights_bytes"].get<size_t>() + m["workspace_bytes"].get<size_t>() +
                   m["shared_arena_bytes"].get<size_t>() + m["parsenet_weights_bytes"].get<size_t>() +
                   m["pipeline_buffer_bytes"].get<size_t>();
    if (!m["detector_in_generator_arena"].get<bool>()) total += m["detector_arena_bytes"].get<size_t>();
    if (restorer_->sr_model())
      total += restorer_->plan().split.sr_budget;  // RealESRNet's weights, arena and tile at most
    return total;
  }

  void start_video() override {
    if (tracks_) tracks_->reset();
  }

  nlohmann::json smoothing() const override {
    if (!tracks_) return nullptr;
    const LandmarkJitter j = tracks_->jitter();
    return {{"frames", tracks_->window()},
            {"tracks", tracks_->tracks_started()},
            {"landmark_jitter_px", {{"detected", j.detected_px}, {"smoothed", j.smoothed_px}, {"steps", j.steps}}}};
  }

  nlohmann::json memory() const override {
    nlohmann::json m = restorer_->memory_json();
    m["plan"] = to_json(restorer_->plan());
    m["planned_bytes"] = planned_bytes();
    return m;
  }

 private:
  std::unique_ptr<Restorer> restorer_;
  std::optional<FaceTracks> tracks_;  // with --smooth
};

}  // namespace

std::unique_ptr<VideoRestorer> make_restore_processor(const RestoreArgs& a, int smooth) {
  return std::make_unique<FramesThroughRestorer>(a, smooth);
}

}  // namespace gpen::cli
