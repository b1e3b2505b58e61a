// Videos: Restorer.restore_video over the engine's restore_video (engine/video/video_restore.h),
// the one path `gpen video` takes, so a restored video equals the CLI's frame for frame; and the
// two steps of restoring one in segments (engine/video/video_segments.h) that
// gpen_engine.ray_restore spreads over actors: the keyframe cuts and the join.
//
// The video runs on a thread of its own while the calling thread, without the GIL, waits for it
// and every tenth of a second takes the GIL to run Python's signal handlers: Ctrl-C (or an
// exception from the progress callback) cancels the video, which leaves no partial output.
#include <atomic>
#include <chrono>
#include <exception>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "engine/core/error.h"
#include "engine/video/video_segments.h"
#include "python/src/bindings.h"

namespace gpen::py {

nb::object restore_video(Restorer& restorer, std::mutex& mu, video::VideoJob job, int smooth, nb::object progress) {
  std::atomic<bool> cancel{false};
  std::optional<nb::python_error> raised;  // by the callback or a signal handler: raised again here
  job.cancel = &cancel;
  if (!progress.is_none())
    job.progress = [&](const video::PipelineProgress& p) {
      if (cancel.load()) return;
      nb::gil_scoped_acquire gil;
      try {
        nb::dict d;
        d["frames"] = p.frames;
        d["frames_total"] = p.frames_total;
        d["faces"] = p.faces;
        d["elapsed_s"] = p.elapsed_s;
        progress(d);
      } catch (nb::python_error& e) {
        if (!raised) raised.emplace(std::move(e));
        cancel = true;
      }
    };
  std::string report;
  std::exception_ptr failed;
  {
    nb::gil_scoped_release unlocked;
    std::lock_guard lock(mu);
    std::promise<void> finished;
    std::future<void> done = finished.get_future();
    std::thread worker([&] {
      try {
        video::RestoreFrames frames(restorer, smooth);
        report = video::restore_video(frames, job).dump();
      } catch (...) {
        failed = std::current_exception();
      }
      finished.set_value();
    });
    while (done.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
      nb::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) {
        nb::python_error e;  // takes the error the handler raised (KeyboardInterrupt)
        if (!raised) raised.emplace(std::move(e));
        cancel = true;
      }
    }
    worker.join();
  }
  if (raised) throw std::move(*raised);
  if (failed) std::rethrow_exception(failed);
  return nb::module_::import_("json").attr("loads")(report);
}

namespace {

video::VideoReadOptions cut(std::optional<double> start, std::optional<double> duration, bool ignore_orientation) {
  GPEN_CHECK(!start || *start >= 0, "start must not be negative");
  GPEN_CHECK(!duration || *duration > 0, "duration must be positive");
  video::VideoReadOptions o;
  o.start_s = start.value_or(0);
  o.duration_s = duration.value_or(-1);
  o.apply_orientation = !ignore_orientation;
  return o;
}

std::vector<double> keyframe_cuts(const std::string& path) {
  nb::gil_scoped_release unlocked;
  return video::keyframe_cuts(path);
}

int64_t join_segments(const std::string& source, const std::vector<std::string>& segments, const std::string& output,
                      std::optional<double> start, std::optional<double> duration, bool ignore_orientation) {
  const video::VideoReadOptions run = cut(start, duration, ignore_orientation);
  nb::gil_scoped_release unlocked;
  return video::join_segments(source, segments, output, run);
}

}  // namespace

video::VideoReadOptions video_cut(std::optional<double> start, std::optional<double> duration,
                                  bool ignore_orientation) {
  return cut(start, duration, ignore_orientation);
}

void register_video(nb::module_& m) {
  m.def("video_keyframe_cuts", &keyframe_cuts, nb::arg("path"));
  m.def("join_video_segments", &join_segments, nb::arg("source"), nb::arg("segments"), nb::arg("output"),
        nb::kw_only(), nb::arg("start") = nb::none(), nb::arg("duration") = nb::none(),
        nb::arg("ignore_orientation") = false);
}

}  // namespace gpen::py
