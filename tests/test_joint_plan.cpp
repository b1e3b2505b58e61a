// The restore pipeline runs the detector, then the generator: one arena of the larger size serves
// both (shared_memory), instead of one arena each.
#include <doctest/doctest.h>

#include <algorithm>

#include "engine/plan/memory_plan.h"
#include "engine/models/gpen.h"
#include "engine/models/retinaface.h"

using namespace gpen;

TEST_CASE("joint plan: arena and workspace are the largest, weights add up") {
  MemoryPlan a, b;
  a.arena_bytes = 1000, a.workspace_bytes = 50, a.weights_bytes = 7;
  b.arena_bytes = 600, b.workspace_bytes = 80, b.weights_bytes = 11;
  SharedMemory m = shared_memory({&a, &b});
  CHECK(m.arena_bytes == 1000);
  CHECK(m.workspace_bytes == 80);
  CHECK(m.weights_bytes == 18);
  CHECK(m.total_bytes() == 1098);
  CHECK(shared_memory({}).total_bytes() == 0);
}

TEST_CASE("joint plan: RetinaFace then GPEN share one arena of the larger plan") {
  auto be = make_cpu_backend();
  WorkspaceFn ws = [&](const Graph& g, const Node& n) { return be->workspace_bytes(g, n); };
  RetinaFaceGraph rg = build_retinaface_graph(RetinaFaceBackbone::mobilenet025, 192, 256);
  MemoryPlan det = plan_memory(rg.graph, ws);
  GpenConfig c;
  c.size = 64;
  c.narrow = 1.0 / 8;
  c.style_dim = 32;
  c.batch = 4;
  GpenGraph gg = build_gpen_graph(c);
  MemoryPlan gen = plan_memory(gg.graph, ws);
  SharedMemory joint = shared_memory({&det, &gen});
  CHECK(joint.arena_bytes == std::max(det.arena_bytes, gen.arena_bytes));
  CHECK(joint.arena_bytes < det.arena_bytes + gen.arena_bytes);
  CHECK(joint.total_bytes() < det.total_bytes() + gen.total_bytes());
  CHECK(joint.total_bytes() + std::min(det.arena_bytes, gen.arena_bytes) +
            std::min(det.workspace_bytes, gen.workspace_bytes) ==
        det.total_bytes() + gen.total_bytes());
}
