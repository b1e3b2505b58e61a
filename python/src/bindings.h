#pragma once
// Shared by the parts of the extension module gpen_engine._gpen: numpy <-> gpen::Image without
// conversions, and the registration function of each part.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include "engine/core/image.h"

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

}  // namespace gpen::py
