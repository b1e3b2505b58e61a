// Restorer (the engine's Restorer: the photo job of `gpen restore`, set up as the CLI sets it up, so
// that results equal the CLI's bit for bit) and Detector. The engine's objects are not thread-safe:
// each Python object serialises its calls with a mutex, taken with the GIL released, so other
// Python threads (and other instances) run meanwhile.
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

#include "engine/core/bytes.h"
#include "engine/core/error.h"
#include "engine/photo/restorer.h"
#include "engine/runtime/device.h"
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

// The engine's Restorer (engine/photo/restorer.h): the setup `gpen restore` makes, fed the same
// choices, so results equal the CLI's bit for bit.
class PyRestorer {
 public:
  PyRestorer(const std::string& model, const std::string& detector, std::optional<std::string> parse,
             std::optional<std::string> sr, const std::string& device, std::optional<std::string> precision,
             Budget memory_budget, std::optional<int> threads, double alpha, float threshold,
             std::optional<int> det_max_side, std::optional<int> batch, std::string sr_tile, int upscale,
             bool only_center_face, float fidelity, bool face_upsample, bool low_memory) {
    GPEN_CHECK(!threads || *threads >= 1, "threads must be at least 1");
    GPEN_CHECK(!batch || *batch >= 1, "batch must be at least 1");
    RestoreConfig c;
    c.model = model;
    c.detector = detector;
    c.parser = parse.value_or("");
    c.sr = sr.value_or("");
    c.sr_tile = std::move(sr_tile);
    c.device = parse_device(device);
    c.precision = precision.value_or("");
    if (memory_budget)
      c.memory_budget = std::holds_alternative<int64_t>(*memory_budget)
                            ? size_t(std::max<int64_t>(0, std::get<int64_t>(*memory_budget)))
                            : parse_bytes(std::get<std::string>(*memory_budget));
    c.batch = batch.value_or(0);
    c.alpha = alpha;
    c.threshold = threshold;
    c.det_max_side = det_max_side.value_or(-1);
    c.upscale = upscale;  // the facexlib flows only: the rule table (check_config) refuses them for GPEN
    c.only_center_face = only_center_face;
    c.fidelity = fidelity;  // CodeFormer's w
    c.face_upsample = face_upsample;  // CodeFormer with sr
    c.threads = threads.value_or(0);
    c.low_memory = low_memory;  // memory_budget is then the CPU's low-memory mode's (gpen restore --memory-budget)
    c.keep_faces = false;       // restore() hands back the composite and the detections, not the crops
    nb::gil_scoped_release unlocked;
    r_ = Restorer::open(c);
  }

  nb::tuple restore(const ImageIn& a) {
    ImageView photo = view_of(a);
    RestoreResult r;
    {
      nb::gil_scoped_release unlocked;
      std::lock_guard lock(mu_);
      r = r_->restore(photo);
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
      out = r_->restore_aligned(face);
    }
    return to_array(std::move(out));
  }

  // The tile RealESRNet gets for a width x height photo, and why (as `gpen restore --report` says).
  nb::tuple sr_tile(int width, int height) {
    std::string why;
    int tile = 0;
    {
      nb::gil_scoped_release unlocked;
      std::lock_guard lock(mu_);
      tile = r_->sr_tile(width, height, &why);
    }
    return nb::make_tuple(tile, why);
  }

#ifdef GPEN_PY_VIDEO
  // A video file, as `gpen video SRC -o DST` restores it (src/video.cpp).
  nb::object restore_video(const std::string& src, const std::string& dst, std::optional<std::string> codec,
                           std::optional<std::string> pix_fmt, std::optional<int> crf,
                           std::optional<std::string> preset, std::optional<double> start,
                           std::optional<double> duration, bool ignore_orientation, std::optional<int64_t> max_pixels,
                           nb::object progress, std::optional<double> run_start, bool other_streams, int smooth) {
    GPEN_CHECK(smooth >= 0 && smooth <= 64, "smooth must be within 0..64");
    GPEN_CHECK(!crf || (*crf >= 0 && *crf <= 63), "crf must be within 0..63");
    GPEN_CHECK(!max_pixels || *max_pixels >= 1, "max_pixels must be at least 1");
    GPEN_CHECK(!run_start || *run_start >= 0, "run_start must not be negative");
    video::VideoJob job;
    job.input = src;
    job.output = dst;
    job.read = video_cut(start, duration, ignore_orientation);
    if (max_pixels) job.read.max_pixels = *max_pixels;
    job.read.run_start_s = run_start.value_or(-1);
    job.read.other_streams = other_streams;
    job.encode.codec = codec.value_or("");
    job.encode.pix_fmt = pix_fmt.value_or("");
    job.encode.crf = crf.value_or(-1);
    job.encode.preset = preset.value_or("");
    return py::restore_video(*r_, mu_, std::move(job), smooth, std::move(progress));
  }
#endif

  nb::object memory() {
    nlohmann::json j;
    {
      std::lock_guard lock(mu_);
      j = r_->memory_json();
      j["size"] = r_->plan().size;
    }
    return json_object(j);
  }

  // What the setup decided (`gpen restore --report`'s plan).
  nb::object plan() const { return json_object(to_json(r_->plan())); }
  int size() const { return r_->plan().size; }
  std::string device() const { return r_->plan().device; }

 private:
  static nb::object json_object(const nlohmann::json& j) { return nb::module_::import_("json").attr("loads")(j.dump()); }
  std::unique_ptr<Restorer> r_;
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
                    std::optional<int>, std::optional<int>, std::string, int, bool, float, bool, bool>(),
           nb::arg("model"), nb::arg("detector"), nb::arg("parse") = nb::none(), nb::arg("sr") = nb::none(),
           nb::kw_only(), nb::arg("device") = "auto", nb::arg("precision") = nb::none(),
           nb::arg("memory_budget") = nb::none(), nb::arg("threads") = nb::none(), nb::arg("alpha") = 1.0,
           nb::arg("threshold") = 0.0f, nb::arg("det_max_side") = nb::none(), nb::arg("batch") = nb::none(),
           nb::arg("sr_tile") = "auto", nb::arg("upscale") = 1, nb::arg("only_center_face") = false,
           nb::arg("fidelity") = 0.5f, nb::arg("face_upsample") = false, nb::arg("low_memory") = false)
      .def("restore", &PyRestorer::restore, nb::arg("image"))
      .def("restore_aligned", &PyRestorer::restore_aligned, nb::arg("face"))
      .def("sr_tile", &PyRestorer::sr_tile, nb::arg("width"), nb::arg("height"))
#ifdef GPEN_PY_VIDEO
      .def("restore_video", &PyRestorer::restore_video, nb::arg("src"), nb::arg("dst"), nb::kw_only(),
           nb::arg("codec") = nb::none(), nb::arg("pix_fmt") = nb::none(), nb::arg("crf") = nb::none(),
           nb::arg("preset") = nb::none(), nb::arg("start") = nb::none(), nb::arg("duration") = nb::none(),
           nb::arg("ignore_orientation") = false, nb::arg("max_pixels") = nb::none(),
           nb::arg("progress") = nb::none(), nb::arg("run_start") = nb::none(), nb::arg("other_streams") = true,
           nb::arg("smooth") = 0)
#endif
      .def_prop_ro("memory", &PyRestorer::memory)
      .def_prop_ro("plan", &PyRestorer::plan)
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
