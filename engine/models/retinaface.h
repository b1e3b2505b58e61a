#pragma once
// RetinaFace (phase 'test') as an engine graph, with the mobilenet0.25 or ResNet-50 backbone
// (../shared/reference/gpen-semantics.md), weight names as the converter writes them: every conv
// with its BatchNorm folded into "<conv module path>.weight" (HWIO) and ".bias".
// The graph is built for one input size; RetinaFaceDetector caches one executor per size.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/runtime/backend.h"
#include "kernels/cpu/detect_post.h"
#include "engine/graph/graph.h"
#include "engine/core/image.h"
#include "engine/runtime/pipeline_ops.h"

namespace gpen {

enum class RetinaFaceBackbone { mobilenet025, resnet50 };
// "mobilenet0.25" / "resnet50" (the converter's config spelling); parse also takes "mnet", "r50".
const char* retinaface_backbone_name(RetinaFaceBackbone b);
RetinaFaceBackbone parse_retinaface_backbone(const std::string& s);

struct RetinaFaceGraph {
  Graph graph;
  int input = -1;   // [1, H, W, 3] BGR float minus the mean (104, 117, 123)
  int loc = -1;     // [P, 4] box regressions, prior order (level, y, x, anchor)
  int conf = -1;    // [P, 2] softmax of the class logits; [:, 1] is the face score
  int landms = -1;  // [P, 10] landmark regressions
  // With `trace`: NHWC tensors kept readable after a run, under the reference's trace names
  // ("body.stage1.0", "body.layer2", "fpn.out1", "ssh1", "head.class1", "conf_logits", ...).
  std::map<std::string, int> taps;
};

// h x w is the network input (after any shrink). Throws gpen::Error for sizes out of range.
RetinaFaceGraph build_retinaface_graph(RetinaFaceBackbone b, int h, int w, bool trace = false);

// The image -> network-input size rule of GPEN's detect(): when the longer side exceeds
// `max_side`, scale by target / longer side (default: > 1500 -> 1000; the CLI's --det-max-side N
// means > N -> N). max_side 0 disables. Returns the factor (1 when untouched); out_w / out_h
// get cv2's rounding of w * factor, h * factor.
double detect_input_scale(int w, int h, int max_side, int target_side, int* out_w, int* out_h);

struct DetectOptions {
  DetectParams post;
  int max_side = 1500;     // 0: never shrink
  int target_side = 1000;  // the longer side after a shrink
};

// Loads a converted .gpw (arch "retinaface") and detects faces on BGR images of any size. Runs on
// `backend` (default: the CPU); on a device backend the weights are uploaded once (fp32: the
// detector is a small share of the work, so it keeps full precision).
class RetinaFaceDetector {
 public:
  explicit RetinaFaceDetector(const std::string& gpw_path, std::unique_ptr<Backend> backend = nullptr);
  ~RetinaFaceDetector();
  RetinaFaceDetector(const RetinaFaceDetector&) = delete;
  RetinaFaceDetector& operator=(const RetinaFaceDetector&) = delete;

  RetinaFaceBackbone backbone() const { return backbone_; }
  // Faces in the pixel coordinates of `bgr`, sorted by descending score.
  std::vector<Face> detect(ImageView bgr, const DetectOptions& opt = {});
  // The same on a w x h photo already in this detector's memory (contiguous BGR: device memory on a
  // device, host memory on the CPU), with the pipeline steps of that memory (pipeline_ops()) and
  // `scratch` of ops.detect_scratch_bytes(nh, nw) bytes there (nh, nw: detect_input_scale's network
  // input; none on the host). The input is written into the arena, the outputs read there. On a
  // device, waits once, to bring the candidates back.
  std::vector<Face> detect_in_memory(const uint8_t* bgr, int w, int h, const DetectOptions& opt, PipelineOps& ops,
                                     void* scratch);
  // Runs the network on an already prepared input ([h, w, 3] BGR minus mean, HWC float) and
  // returns the raw head outputs (loc, conf, landms as in RetinaFaceGraph).
  struct Raw {
    std::vector<float> loc, conf, landms;
  };
  Raw run(const float* input_hwc, int h, int w);
  // The same input through the network with every node timed alone (Executor::run_profiled):
  // milliseconds per node of graph_for(h, w), for `gpen bench --arch retinaface --profile`.
  std::vector<double> run_profiled(const float* input_hwc, int h, int w);
  const Graph& graph_for(int h, int w);
  // Arena bytes the plan for an h x w input needs (0 when not cached), and the bytes of the one
  // arena all cached executors share (the largest plan seen since it last grew).
  size_t arena_bytes(int h, int w) const;
  size_t arena_capacity() const;
  // The plan an h x w input gets (arena, workspace), without running or caching an executor: what
  // the photo pipeline's low-memory mode checks a photo's detection against before it runs.
  struct Memory {
    size_t arena_bytes = 0, workspace_bytes = 0;
  };
  Memory planned_memory(int h, int w);
  // Bytes of the weights as the detector reads them (the file's mapping on the CPU, resident once
  // read; the widened copies of a half-precision file; on a device, its one upload).
  size_t weights_bytes() const;
  // Runs inside memory the caller owns and leaves alone while detect() runs (FaceRestorer lends
  // the generator's arena and workspace: detection and restoration never overlap, so the photo
  // pipeline needs the larger of the two arenas, not their sum). It must be memory of this
  // detector's device and outlive its use here; a plan that does not fit gets the detector's own
  // memory as before.
  void share_memory(void* arena, size_t arena_bytes, void* workspace, size_t workspace_bytes);
  // Whether the current plans run in lent memory.
  bool uses_shared_memory() const;
  size_t cached_sizes() const { return cache_.size(); }
  const char* device() const { return backend_->name(); }
  // The pipeline steps of the detector's memory (cpu_pipeline_ops() on the host; nullptr on a
  // device that has none): detect_in_memory's `ops`.
  PipelineOps* pipeline_ops() const;

 private:
  struct Model;
  struct Cached;
  Cached& executor_for(int h, int w);
  std::unique_ptr<Cached> graph_and_plan(int h, int w) const;  // no executor yet

  RetinaFaceBackbone backbone_ = RetinaFaceBackbone::mobilenet025;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Backend> backend_;
  // One executor per input size, all sharing one arena and one workspace that grow only when a
  // larger plan needs them (growing drops the cached executors, which point into the old ones).
  // Photos of one size, the common case in a batch, build and plan once. Bounded (LRU) so a
  // folder of odd sizes cannot pile up graphs.
  std::vector<std::unique_ptr<Cached>> cache_;
  static constexpr size_t kMaxCached = 8;
  // planned_memory's answers per input size (the photos of a folder or a video share a few).
  std::vector<std::pair<std::pair<int, int>, Memory>> planned_;
  // The graph and plan of planned_memory's last new size, until executor_for takes them: a size is
  // built and planned once.
  std::unique_ptr<Cached> planned_graph_;
};

}  // namespace gpen
