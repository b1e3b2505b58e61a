// The arch -> flow table (see face_flow.h).
#include "engine/photo/face_flow.h"

#include <utility>

#include "engine/core/error.h"
#include "weights/gpw.h"

namespace gpen {

namespace {

struct FlowRow {
  const char* arch;
  FaceFlow flow;
  const char* name;
};
constexpr FlowRow kFlows[] = {{"gpen", FaceFlow::gpen, "GPEN"}, {"gfpgan", FaceFlow::gfpgan, "GFPGAN"}};

}  // namespace

FaceFlow face_flow_of_arch(const std::string& arch) {
  for (const FlowRow& r : kFlows)
    if (arch == r.arch) return r.flow;
  throw Error("a '" + arch + "' model restores no faces: expected a GPEN or GFPGAN model (arch gpen or gfpgan)");
}

FaceFlow face_flow_of_file(const std::string& gpw_path) {
  const GpwFile f = GpwFile::open(gpw_path);
  try {
    return face_flow_of_arch(f.arch());
  } catch (const Error& e) {
    throw Error(gpw_path + ": " + e.what());
  }
}

const char* face_flow_name(FaceFlow f) {
  for (const FlowRow& r : kFlows)
    if (f == r.flow) return r.name;
  return "?";
}

}  // namespace gpen
