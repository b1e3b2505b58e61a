// gpen_engine._gpen: the engine's restorer, detector, planner, converter and image codecs for
// Python. Engine errors become gpen_engine.Error (a RuntimeError) carrying the engine's message.
#include <nanobind/nanobind.h>

#include "engine/core/error.h"
#include "engine/core/version.h"
#include "python/src/bindings.h"

NB_MODULE(_gpen, m) {
  namespace nb = nanobind;
  m.doc() = "gpen-engine: GPEN face restoration with memory planned before it runs";
  nb::exception<gpen::Error>(m, "Error", PyExc_RuntimeError);
  m.attr("__version__") = gpen::version();
  gpen::py::register_images(m);
  gpen::py::register_restorer(m);
  gpen::py::register_tools(m);
#ifdef GPEN_PY_VIDEO
  gpen::py::register_video(m);
#endif
}
