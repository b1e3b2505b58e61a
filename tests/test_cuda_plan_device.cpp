// Planning for the CUDA backend without a GPU: CudaProvider::workspace_bytes (what `gpen plan
// --device cuda` uses) must give, node by node, what the CUDA backend's workspace_bytes gives, on
// the real graphs (GPEN-BFR-256 in fp32 and fp16, GPEN-512 fp16, RetinaFace R50 and mobilenet0.25),
// and must work with no device at all. Then the CLI: `--device cuda` plans with those figures
// where CUDA is compiled in and fails with one line where it is not; `--device cpu` is the default.
// Named test_cuda_* so that it links the CUDA build under test (the emulator by default).
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <unistd.h>

#include "engine/runtime/device.h"
#include "engine/plan/memory_plan.h"
#include "engine/models/gpen.h"
#include "engine/models/retinaface.h"
#include "engine/runtime/cuda/backend_cuda.h"
#include "kernels/cuda/compat.h"
#include "tests/test_paths.h"

using namespace gpen;
namespace fs = std::filesystem;

namespace {

std::unique_ptr<Backend> emulated_cuda_backend() {
  return make_backend(DeviceOptions{DeviceKind::cuda}, &cuda::cuda_provider());
}

GpenConfig gpen_config(int size, int cm, double narrow, DType dt) {
  GpenConfig c;
  c.size = size;
  c.channel_multiplier = cm;
  c.narrow = narrow;
  c.act_dtype = c.weight_dtype = dt;
  return c;
}

// Every node: the provider's function equals the backend's override. Returns how many nodes are
// of the kinds that have a workspace function (conv2d, upfirdn2d, modconv), so a caller can check
// that the comparison covered them.
int check_every_node(const Graph& g, const Backend& backend, const CudaProvider& p) {
  int kernels_with_workspace = 0;
  for (const Node& n : g.nodes()) {
    CAPTURE(n.name);
    CHECK(p.workspace_bytes(g, n) == backend.workspace_bytes(g, n));
    if (std::holds_alternative<Conv2dParams>(n.params) || std::holds_alternative<UpFirDn2dParams>(n.params) ||
        std::holds_alternative<ModConvParams>(n.params))
      ++kernels_with_workspace;
  }
  return kernels_with_workspace;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Exit status and output (stdout and stderr together) of `gpen plan ARGS`.
struct CliRun {
  int status = -1;
  std::string out;
};

CliRun gpen_plan(const std::string& args) {
  const fs::path log = fs::temp_directory_path() / ("gpen_test_plan_device_" + std::to_string(::getpid()) + ".log");
  const int st = std::system((gpen_test::binary_dir() + "/gpen plan " + args + " >" + log.string() + " 2>&1").c_str());
  CliRun r{WIFEXITED(st) ? WEXITSTATUS(st) : -1, read_file(log)};
  fs::remove(log);
  CHECK_MESSAGE(r.out.find("Sanitizer") == std::string::npos, r.out);
  CHECK_MESSAGE(r.out.find("runtime error:") == std::string::npos, r.out);
  return r;
}

nlohmann::json without_timing(nlohmann::json j) {
  j.erase("plan_ms");
  return j;
}

}  // namespace

TEST_CASE("CudaProvider::workspace_bytes equals the CUDA backend's workspace_bytes on every node") {
  const CudaProvider& p = cuda::cuda_provider();
  REQUIRE(static_cast<bool>(p.workspace_bytes));
  auto backend = emulated_cuda_backend();
  REQUIRE(std::string(backend->name()) == "cuda");

  for (DType dt : {DType::f32, DType::f16}) {
    CAPTURE(std::string(dtype_name(dt)));
    GpenGraph gg = build_gpen_graph(gpen_config(256, 1, 0.5, dt));  // GPEN-BFR-256: 45 such nodes
    CHECK(check_every_node(gg.graph, *backend, p) >= 45);
  }
  {
    GpenGraph gg = build_gpen_graph(gpen_config(512, 2, 1.0, DType::f16));  // GPEN-BFR-512
    CHECK(check_every_node(gg.graph, *backend, p) > 50);
  }
  for (RetinaFaceBackbone bb : {RetinaFaceBackbone::resnet50, RetinaFaceBackbone::mobilenet025}) {
    CAPTURE(std::string(retinaface_backbone_name(bb)));
    RetinaFaceGraph rg = build_retinaface_graph(bb, 768, 1024);
    CHECK(check_every_node(rg.graph, *backend, p) > 20);
  }
}

#if !defined(GPEN_CUDA_TESTS_NATIVE)
TEST_CASE("CudaProvider::workspace_bytes plans without a device") {
  const CudaProvider& p = cuda::cuda_provider();
  GpenGraph gg = build_gpen_graph(gpen_config(256, 1, 0.5, DType::f16));
  auto backend = emulated_cuda_backend();
  const MemoryPlan with_backend =
      plan_memory(gg.graph, [&](const Graph& g, const Node& n) { return backend->workspace_bytes(g, n); });
  cuda_emu::set_device_count(0);
  CHECK(cuda::device_count() == 0);
  MemoryPlan no_device;
  CHECK_NOTHROW(no_device = plan_memory(gg.graph, p.workspace_bytes));
  cuda_emu::set_device_count(1);
  CHECK(cudaGetLastError() == cudaSuccess);
  CHECK(no_device.workspace_bytes == with_backend.workspace_bytes);
  CHECK(no_device.arena_bytes == with_backend.arena_bytes);
  CHECK(no_device.total_bytes() == with_backend.total_bytes());
}
#endif

TEST_CASE("gpen plan --device: cuda uses the CUDA workspace figures, cpu is the default") {
  if (!fs::exists(gpen_test::binary_dir() + "/gpen")) {
    MESSAGE("skipped: " << gpen_test::binary_dir() << "/gpen is not built");
    return;
  }
  // --device cpu is what plan always did.
  const CliRun dflt = gpen_plan("--size 64 --precision fp16 --json");
  const CliRun cpu = gpen_plan("--size 64 --precision fp16 --json --device cpu");
  REQUIRE(dflt.status == 0);
  REQUIRE(cpu.status == 0);
  CHECK(without_timing(nlohmann::json::parse(cpu.out)) == without_timing(nlohmann::json::parse(dflt.out)));
  CHECK(nlohmann::json::parse(cpu.out)["device"] == "cpu");

  const CliRun bad = gpen_plan("--device tpu");
  CHECK(bad.status != 0);
  CHECK(bad.out == "gpen: error: gpen plan: unknown --device 'tpu' (expected cpu or cuda)\n");

  const CliRun cuda = gpen_plan("--size 64 --precision fp16 --json --device cuda");
  if (!cuda_compiled_in()) {
    // The gpen binary and this test come from one build: no CUDA here, none there.
    CHECK(cuda.status != 0);
    CHECK(cuda.out ==
          "gpen: error: gpen plan --device cuda: CUDA support was not compiled in (rebuild with nvcc / "
          "-DGPEN_CUDA=ON)\n");
    return;
  }
  REQUIRE(cuda.status == 0);
  const nlohmann::json j = nlohmann::json::parse(cuda.out);
  GpenGraph gg = build_gpen_graph(gpen_config(64, 2, 1.0, DType::f16));
  const MemoryPlan want = plan_memory(gg.graph, cuda::cuda_provider().workspace_bytes);
  CHECK(j["device"] == "cuda");
  CHECK(j["precision"] == "fp16");
  CHECK(j["workspace_bytes"].get<size_t>() == want.workspace_bytes);
  CHECK(j["arena_bytes"].get<size_t>() == want.arena_bytes);
  CHECK(j["total_bytes"].get<size_t>() == want.total_bytes());

  const CliRun pipe = gpen_plan("--pipeline --arch retinaface-mnet --input-size 64x48 --size 64 --json --device cuda");
  REQUIRE(pipe.status == 0);
  CHECK(nlohmann::json::parse(pipe.out)["device"] == "cuda");
  const CliRun text = gpen_plan("--size 64 --device cuda");
  REQUIRE(text.status == 0);
  CHECK(text.out.find("cuda backend)") != std::string::npos);
}
