// Restorer (the photo job of `gpen restore`, set up as the CLI sets it up, so that results equal
// the CLI's bit for bit) and Detector. The engine's objects are not thread-safe: each Python
// object serialises its calls with a mutex, taken with the GIL released, so other Python threads
// (and other instances) run meanwhile.
#include <omp.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "apps/format.h"
#include "apps/restore_common.h"
#include "apps/sr_common.h"
#include "engine/core/error.h"
#include "engine/models/parsenet.h"
#include "engine/photo/super_resolution.h"
#include "engine/photo/pipeline.h"
#include "engine/runtime/device.h"
#include "kernels/cpu/face_io.h"
#include "kernels/cpu/image_resize.h"
#include "python/src/bindings.h"

namespace gpen::py {
namespace {

using Budget = std::optional<std::variant<int64_t, std::string>>;

nb::list faces_list(const std::vector<Face>& faces) {
  nb::list out;
  for (const Face& f : faces) {
    nb::list lm;
    for (int k = 0; k < 5; ++k) lm.append(nb::make_tuple(f.landmarks[2 * k], f.landmarks[2 * k + 1]));
    nb::dict d;
    d["box"] = nb::make_tuple(f.box[0], f.box[1], f.box[2], f.box[3]);
    d["score"] = f.score;
    d["landmarks"] = lm;
    out.append(d);
  }
  return out;
}

void set_threads(std::optional<int> threads) {
  // OpenMP's thread count is per calling thread: set it on the thread that runs the engine.
  if (threads) omp_set_num_threads(*threads);
}

class PyRestorer {
 public:
  PyRestorer(const std::string& model, const std::string& detector, std::optional<std::string> parse,
             std::optional<std::string> sr, const std::string& device, std::optional<std::string> precision,
             Budget memory_budget, std::optional<int> threads, double alpha, float threshold,
             std::optional<int> det_max_side, std::optional<int> batch, std::string sr_tile)
      : threads_(threads) {
    GPEN_CHECK(!threads || *threads >= 1, "threads must be at least 1");
    GPEN_CHECK(alpha >= 0.0 && alpha <= 1.0, "alpha must be in [0, 1]");
    nb::gil_scoped_release unlocked;
    set_threads(threads_);
    cli::restore_detail::RestoreArgs a;  // the CLI's own setup code, fed the same choices
    a.model = model;
    a.device = device;
    a.precision = precision.value_or("");
    backend_ = make_backend(cli::restore_detail::device_options(a));
    model_ = cli::restore_detail::open_model(a, *backend_);
    DeviceOptions det_opt = cli::restore_detail::device_options(a);
    det_opt.kind = is_device_backend(*backend_) ? DeviceKind::cuda : DeviceKind::cpu;
    detector_ = std::make_unique<RetinaFaceDetector>(detector, make_backend(det_opt));
    // As `gpen restore --parse`: ParseNet on GPEN's backend, so that it can run in GPEN's arena.
    if (parse) parser_ = std::make_unique<ParseNetModel>(*parse, *backend_);
    RestoreOptions opt;
    opt.parser = parser_.get();
    opt.alpha = alpha;
    opt.min_score = threshold;
    opt.detect.post.threshold = threshold;
    if (det_max_side) {
      opt.detect.max_side = *det_max_side;
      opt.detect.target_side = *det_max_side;
    }
    // As `gpen restore` without --vram-budget: half the free RAM on the CPU, 80% of the free device
    // memory (plus the weights already uploaded) on a GPU, or the budget given.
    size_t budget = 0;
    if (memory_budget)
      budget = std::holds_alternative<int64_t>(*memory_budget)
                   ? size_t(std::max<int64_t>(0, std::get<int64_t>(*memory_budget)))
                   : cli::parse_bytes(std::get<std::string>(*memory_budget));
    else if (auto* dev = dynamic_cast<DeviceBackend*>(backend_.get()))
      budget = dev->memory_info().free / 10 * 8 + model_->device_weights_bytes();
    else
      budget = cli::restore_detail::available_ram() / 2;
    if (batch) {
      GPEN_CHECK(*batch >= 1, "batch must be at least 1");
      opt.batch = *batch;
    } else {
      // With sr, RealESRNet keeps its own arena beside GPEN's: GPEN from half the budget (the CLI's rule).
      opt.batch = choose_batch(model_->config(), *backend_, sr ? budget / 2 : budget, 16);
    }
    opt.grow_batch = true;
    batch_limit_ = opt.batch;
    restorer_ = std::make_unique<FaceRestorer>(*model_, *detector_, opt);
    if (sr) {
      // As `gpen restore --sr`: the tile from what the budget leaves beside GPEN's plan at the batch limit.
      sr_ = cli::open_sr_model(*sr, *backend_, a.precision);
      sr_set_.tile = sr_tile;
      GpenConfig gc = model_->config();
      gc.batch = opt.batch;
      const size_t gpen_total =
          plan_memory(build_gpen_graph(gc).graph, [&](const Graph& g, const Node& n) { return backend_->workspace_bytes(g, n); })
              .total_bytes();
      GPEN_CHECK(gpen_total < budget, "sr: GPEN at batch " + std::to_string(opt.batch) + " plans to " +
                                          cli::human_bytes(double(gpen_total)) + ", the whole memory budget of " +
                                          cli::human_bytes(double(budget)) + "; lower batch or raise memory_budget");
      sr_set_.budget = budget - gpen_total;
    }
  }

  // RealESRNet of an image, the tile as `--sr-tile` chooses it.
  Image super_resolved(ImageView img) {
    SrOptions so;
    so.tile = cli::resolve_sr_tile(sr_set_, *sr_, img.width, img.height, nullptr);
    return super_resolve(*sr_, img, so);
  }

  nb::tuple restore(const ImageIn& a) {
    ImageView photo = view_of(a);
    PhotoResult r;
    {
      nb::gil_scoped_release unlocked;
      std::lock_guard lock(mu_);
      set_threads(threads_);
      if (sr_) {
        // The official order: SR of the photo; the photo resized (bilinear, 8-bit) to the SR size;
        // detection, alignment, GPEN and paste on that; composite onto the SR background.
        const Image bg = super_resolved(photo);
        r = restorer_->process(resize_bilinear(photo, bg.width, bg.height), bg);
      } else {
        r = restorer_->process(photo);
      }
    }
    nb::list faces = faces_list(r.faces);
    return nb::make_tuple(to_array(std::move(r.image)), faces);
  }

  // An aligned face crop of any size, resized to the model's as `gpen restore --aligned` does.
  ImageOut restore_aligned(const ImageIn& a) {
    ImageView face = view_of(a);
    Image out;
    {
      nb::gil_scoped_release unlocked;
      std::lock_guard lock(mu_);
      set_threads(threads_);
      const int S = model_->size();
      std::vector<float> x(size_t(S) * S * 3), y(x.size());
      face_to_model(face, S, x.data());
      if (model_->batch() < 1) model_->prepare(1);
      model_->run(1, x.data(), y.data());  // inside the arena planned for the photos' batch
      out = model_to_face(y.data(), S);
      if (sr_) out = super_resolved(out);  // the official aligned flow with use_sr
    }
    return to_array(std::move(out));
  }

  nb::dict memory() {
    std::lock_guard lock(mu_);
    const MemoryPlan& p = model_->plan();
    nb::dict d;
    d["device"] = backend_->name();
    d["precision"] = precision_name(model_->precision());
    d["size"] = model_->size();
    d["gpen_batch"] = restorer_->batch();
    d["gpen_batch_limit"] = batch_limit_;
    d["weights_bytes"] = p.weights_bytes;
    d["arena_bytes"] = p.arena_bytes;
    d["workspace_bytes"] = p.workspace_bytes;
    d["detector_arena_bytes"] = detector_->arena_capacity();
    d["detector_in_generator_arena"] = detector_->uses_shared_memory();
    d["pipeline_on_device"] = restorer_->on_device();
    d["pipeline_buffer_bytes"] = restorer_->device_buffer_bytes();
    return d;
  }

  int size() const { return model_->size(); }
  std::string device() const { return backend_->name(); }

 private:
  std::optional<int> threads_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<GpenModel> model_;
  std::unique_ptr<RetinaFaceDetector> detector_;
  std::unique_ptr<ParseNetModel> parser_;  // before restorer_, which points at it
  std::unique_ptr<RrdbModel> sr_;
  cli::SrSettings sr_set_;
  std::unique_ptr<FaceRestorer> restorer_;
  int batch_limit_ = 1;
  std::mutex mu_;
};

class PyDetector {
 public:
  PyDetector(const std::string& path, const std::string& device, float threshold, std::optional<int> det_max_side,
             std::optional<int> threads)
      : threads_(threads) {
    nb::gil_scoped_release unlocked;
    set_threads(threads_);
    DeviceOptions o;
    o.kind = parse_device(device);
    det_ = std::make_unique<RetinaFaceDetector>(path, make_backend(o));
    opt_.post.threshold = threshold;
    if (det_max_side) {
      opt_.max_side = *det_max_side;
      opt_.target_side = *det_max_side;
    }
  }
  nb::list detect(const ImageIn& a) {
    ImageView photo = view_of(a);
    std::vector<Face> faces;
    {
      nb::gil_scoped_release unlocked;
      std::lock_guard lock(mu_);
      set_threads(threads_);
      faces = det_->detect(photo, opt_);
    }
    return faces_list(faces);
  }
  std::string device() const { return det_->device(); }

 private:
  std::optional<int> threads_;
  std::unique_ptr<RetinaFaceDetector> det_;
  DetectOptions opt_;
  std::mutex mu_;
};

}  // namespace

void register_restorer(nb::module_& m) {
  nb::class_<PyRestorer>(m, "Restorer")
      .def(nb::init<const std::string&, const std::string&, std::optional<std::string>, std::optional<std::string>,
                    const std::string&, std::optional<std::string>, Budget, std::optional<int>, double, float,
                    std::optional<int>, std::optional<int>, std::string>(),
           nb::arg("model"), nb::arg("detector"), nb::arg("parse") = nb::none(), nb::arg("sr") = nb::none(),
           nb::kw_only(), nb::arg("device") = "auto", nb::arg("precision") = nb::none(),
           nb::arg("memory_budget") = nb::none(), nb::arg("threads") = nb::none(), nb::arg("alpha") = 1.0,
           nb::arg("threshold") = 0.9f, nb::arg("det_max_side") = nb::none(), nb::arg("batch") = nb::none(),
           nb::arg("sr_tile") = "auto")
      .def("restore", &PyRestorer::restore, nb::arg("image"))
      .def("restore_aligned", &PyRestorer::restore_aligned, nb::arg("face"))
      .def_prop_ro("memory", &PyRestorer::memory)
      .def_prop_ro("size", &PyRestorer::size)
      .def_prop_ro("device", &PyRestorer::device);
  nb::class_<PyDetector>(m, "Detector")
      .def(nb::init<const std::string&, const std::string&, float, std::optional<int>, std::optional<int>>(),
           nb::arg("path"), nb::kw_only(), nb::arg("device") = "auto", nb::arg("threshold") = 0.9f,
           nb::arg("det_max_side") = nb::none(), nb::arg("threads") = nb::none())
      .def("detect", &PyDetector::detect, nb::arg("image"))
      .def_prop_ro("device", &PyDetector::device);
}

}  // namespace gpen::py
