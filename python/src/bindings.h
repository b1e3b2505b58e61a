#pragma once
// Shared by the parts of the extension module gpen_engine._gpen: numpy <-> gpen::Image without
// conversions, and the registration function of each part.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include "engine/core/image.h"
#ifdef GPEN_PY_VIDEO
#include <mutex>
#include <optional>

#include "engine/photo/restorer.h"
#include "engine/video/video_restore.h"
#endif

namespace gpen::py {

namespace nb = nanobind;

// HxWx3 uint8, C-contiguous, BGR: what cv2.imread returns and what the engine takes.
using ImageIn = nb::ndarray<const uint8_t, nb::ndim<3>, nb::c_contig, nb::device::cpu>;
using ImageOut = nb::ndarray<nb::numpy, uint8_t, nb::ndim<3>, nb::c_contig>;

// The array's own pixels, borrowed (no copy): the engine reads photos through ImageView. Valid while
// the array is, which the caller's reference guarantees for the duration of a call; checks the shape.
ImageView view_of(const ImageIn& a);
// The result keeps the Image's buffer alive: no copy on the way out.
ImageOut to_array(Image&& img);

void register_images(nb::module_& m);    // src/images.cpp
void register_restorer(nb::module_& m);  // src/restorer.cpp
void register_tools(nb::module_& m);     // src/tools.cpp

#ifdef GPEN_PY_VIDEO  // built with GPEN_VIDEO (engine/video, FFmpeg's libraries)
void register_video(nb::module_& m);     // src/video.cpp: the segments' keyframe cuts and join
// src/video.cpp: one video through `restorer` (the calls serialised by `mu`), cancelled by
// Ctrl-C or by an exception `progress` raises; returns the report as a dict.
nb::object restore_video(Restorer& restorer, std::mutex& mu, video::VideoJob job, int smooth, nb::object progress);
// The cut a start and a duration make (None: from the beginning, to the end), checked as `gpen
// video` checks --start and --duration.
video::VideoReadOptions video_cut(std::optional<double> start, std::optional<double> duration,
                                  bool ignore_orientation);
#endif

}  // namespace gpen::py
