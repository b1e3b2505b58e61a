// The arch -> flow table (see face_flow.h).
#include "engine/photo/face_flow.h"

#include <utility>

#include "weights/gpw.h"

namespace gpen {

namespace {

struct FlowRow {
  const char* arch;
  FaceFlow flow;
  const char* name;
};
constexpr FlowRow kFlows[] = {
    {"gpen", FaceFlow::gpen, "GPEN"},
    {"gfpgan", FaceFlow::gfpgan, "GFPGAN"},
    {"codeformer", FaceFlow::codeformer, "CodeFormer"},
    {"restoreformer", FaceFlow::restoreformer, "RestoreFormer"},
};

}  // namespace

FaceFlow face_flow_of_arch(const std::string& arch) {
  for (const FlowRow& r : kFlows)
    if (arch == r.arch) return r.flow;
  return FaceFlow::gpen;
}

FaceFlow face_flow_of_file(const std::string& gpw_path) {
  if (!GpwFile::has_magic(gpw_path)) return FaceFlow::gpen;
  return face_flow_of_arch(GpwFile::open(gpw_path).arch());
}

const char* face_flow_name(FaceFlow f) {
  for (const FlowRow& r : kFlows)
    if (f == r.flow) return r.name;
  return "?";
}

const char* face_flow_arch(FaceFlow f) {
  for (const FlowRow& r : kFlows)
    if (f == r.flow) return r.arch;
  return "?";
}

}  // namespace gpen
