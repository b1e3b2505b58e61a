// `gpen video`'s processing step over FaceRestorer, one frame at a time (apps/video_restore.h).
#include "apps/video_restore.h"

#include "engine/models/gpen_model.h"
#include "engine/models/parsenet.h"
#include "engine/models/retinaface.h"
#include "engine/photo/pipeline.h"
#include "engine/runtime/device.h"

namespace gpen::cli {
namespace {

using namespace restore_detail;

class FrameByFrame final : public VideoRestorer {
 public:
  explicit FrameByFrame(const RestoreArgs& a)
      : backend_(make_backend(device_options(a))),
        model_(open_model(a, *backend_)),
        detector_(a.detector, make_backend(detector_options(a, *backend_))) {
    if (!a.parse.empty()) parser_ = std::make_unique<ParseNetModel>(a.parse, *backend_);
    RestoreOptions opt;
    opt.parser = parser_.get();
    opt.alpha = a.alpha;
    opt.min_score = a.threshold;
    opt.detect.post.threshold = a.threshold;
    opt.plan = plan_options(a);
    if (a.batch > 0) {
      opt.batch = a.batch;
    } else {
      const BatchChoice bc =
          choose_batch_banded(model_->config(), *backend_, memory_budget(a, *backend_, *model_), 16, opt.plan);
      opt.batch = bc.batch;
      opt.plan = bc.plan;
    }
    opt.grow_batch = true;
    batch_limit_ = opt.batch;
    restorer_ = std::make_unique<FaceRestorer>(*model_, detector_, opt);
  }

  void process(std::span<video::VideoFrame* const> frames) override {
    for (video::VideoFrame* f : frames) {
      PhotoResult r = restorer_->process(f->image);
      f->image = std::move(r.image);
      f->faces = r.restored;
    }
  }

  std::string describe() const override {
    return "GPEN " + std::to_string(model_->size()) + "x" + std::to_string(model_->size()) + " on " + backend_->name() +
           " (" + precision_name(model_->precision()) + "), every frame as one photo, up to " +
           std::to_string(batch_limit_) + " faces per run" + (parser_ ? ", face-parsing paste mask" : "");
  }

  size_t planned_bytes() const override {
    const MemoryPlan& plan = model_->plan();
    size_t total = plan.weights_bytes + plan.workspace_bytes + model_->arena_bytes();
    if (!detector_.uses_shared_memory()) total += detector_.arena_capacity();
    if (parser_) total += parser_->weights_bytes();
    return total + restorer_->device_buffer_bytes();
  }

  nlohmann::json memory() const override {
    const MemoryPlan& plan = model_->plan();
    return {{"device", backend_->name()},
            {"precision", precision_name(model_->precision())},
            {"gpen_batch", restorer_->batch()},
            {"gpen_batch_limit", batch_limit_},
            {"weights_bytes", plan.weights_bytes},
            {"arena_bytes", model_->arena_bytes()},
            {"workspace_bytes", plan.workspace_bytes},
            {"detector_arena_bytes", detector_.arena_capacity()},
            {"detector_in_generator_arena", detector_.uses_shared_memory()},
            {"parsenet_weights_bytes", parser_ ? parser_->weights_bytes() : 0},
            {"pipeline_buffer_bytes", restorer_->device_buffer_bytes()},
            {"planned_bytes", planned_bytes()}};
  }

 private:
  // The detector on the same kind of device as GPEN (its own backend: own stream, own arena).
  static DeviceOptions detector_options(const RestoreArgs& a, const Backend& gpen_backend) {
    DeviceOptions o = device_options(a);
    o.kind = is_device_backend(gpen_backend) ? DeviceKind::cuda : DeviceKind::cpu;
    return o;
  }

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<GpenModel> model_;
  RetinaFaceDetector detector_;
  std::unique_ptr<ParseNetModel> parser_;
  std::unique_ptr<FaceRestorer> restorer_;
  int batch_limit_ = 1;
};

}  // namespace

std::unique_ptr<VideoRestorer> make_restore_processor(const RestoreArgs& a) {
  return std::make_unique<FrameByFrame>(a);
}

}  // namespace gpen::cli
