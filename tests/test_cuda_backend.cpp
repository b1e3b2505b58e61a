// The CUDA backend (engine/runtime/cuda/backend_cuda.cu) behind engine/runtime/backend.h: whole graphs (a small
// GPEN, RetinaFace mobilenet0.25) against the CPU backend, zero allocations per run, CUDA-graph
// replay against direct launches, device selection and its errors. Emulated by default
// (tests/cuda_emu), natively on a GPU with GPEN_CUDA_TESTS_NATIVE.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "converter/convert.h"
#include "engine/runtime/device.h"
#include "engine/models/gpen_model.h"
#include "engine/models/retinaface.h"
#include "engine/photo/npy.h"
#include "engine/runtime/cuda/backend_cuda.h"
#include "tests/cuda_emu/small_gpen.h"
#include "kernels/cuda/compat.h"
#include "kernels/cuda/ops.h"
#include "tests/test_paths.h"

using namespace gpen;
using cuda_test::small_gpen;
namespace fs = std::filesystem;

namespace {

std::unique_ptr<Backend> cuda_backend(bool graphs = true) {
  DeviceOptions o;
  o.kind = DeviceKind::cuda;
  o.cuda_graphs = graphs;
  return cuda::make_cuda_backend(o);
}

DeviceBackend& device(Backend& b) { return dynamic_cast<DeviceBackend&>(b); }

std::vector<float> faces(int n, int size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(n) * size * size * 3);
  for (auto& x : v) x = u(rng);
  return v;
}

// max |a - b| / max |b|: one number per comparison, scale-free.
double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double err = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    REQUIRE(std::isfinite(a[i]));
    err = std::max(err, static_cast<double>(std::fabs(a[i] - b[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(b[i])));
  }
  return err / std::max(scale, 1e-30);
}

std::vector<float> run_gpen(GpenModel& m, int batch, const std::vector<float>& in) {
  m.prepare(batch);
  std::vector<float> out(in.size());
  m.run(in.data(), out.data());
  return out;
}

const std::vector<float>& cpu_reference() {
  static std::vector<float> ref = [] {
    auto cpu = make_cpu_backend();
    auto m = GpenModel::synthetic(small_gpen(DType::f32), *cpu, 3);
    return run_gpen(*m, 2, faces(2, 32, 11));
  }();
  return ref;
}

}  // namespace

TEST_CASE("CUDA backend: a small GPEN matches the CPU backend in fp32, fp16 and bf16") {
  const std::vector<float>& ref = cpu_reference();
  // fp32: the same math in another summation order (implicit GEMM tiles vs the CPU's blocked
  // GEMM) through ~20 layers: a few ulp per layer.
  // fp16 / bf16: weights, activations and every intermediate are rounded to 11 / 8 significant
  // bits at each of the ~20 layers (accumulation stays f32). Each rounding is a relative error of
  // at most 2^-11 / 2^-8 and they add up roughly like a random walk over the layers and the
  // summed terms. Measured (emulator): 3e-7 fp32, 1.2e-3 fp16 (2.5 u, u = 2^-11), 1.0e-2 bf16
  // (2.6 u, u = 2^-8); the bounds are 10 u for the 16-bit types.
  struct Case {
    DType t;
    double tol;
  } cases[] = {{DType::f32, 1e-5}, {DType::f16, 5e-3}, {DType::bf16, 4e-2}};
  for (const Case& c : cases) {
    const std::string name = dtype_name(c.t);
    CAPTURE(name);
    auto be = cuda_backend();
    auto m = GpenModel::synthetic(small_gpen(c.t), *be, 3);
    CHECK(m->precision() == c.t);
    // fp32 runs the batch of two; the 16-bit runs take the first face only (time under ASan).
    const int n = c.t == DType::f32 ? 2 : 1;
    std::vector<float> in = faces(2, 32, 11);
    in.resize(in.size() / 2 * n);
    const std::vector<float> out = run_gpen(*m, n, in);
    const std::vector<float> want(ref.begin(), ref.begin() + static_cast<std::ptrdiff_t>(out.size()));
    // Weights in one allocation, in the precision's dtype: the plan's figure plus alignment.
    CHECK(m->device_weights_bytes() >= m->plan().weights_bytes);
    CHECK(m->device_weights_bytes() < m->plan().weights_bytes + 256 * m->graph().tensors().size());
    const double e = rel_error(out, want);
    MESSAGE(name << " relative error " << e);
    CHECK(e < c.tol);
  }
}

TEST_CASE("CUDA backend: steady-state runs allocate nothing, graph replays equal direct launches bit for bit") {
  auto with_graphs = cuda_backend(true);
  auto direct = cuda_backend(false);
  auto a = GpenModel::synthetic(small_gpen(DType::f32), *with_graphs, 5);
  auto b = GpenModel::synthetic(small_gpen(DType::f32), *direct, 5);
  const std::vector<float> in = faces(2, 32, 21);
  std::vector<float> out_a(in.size()), out_b(in.size());
  a->prepare(2);
  b->prepare(2);
  // Weights: one allocation; arena and workspace: one each (workspace only when non-zero).
  const size_t after_prepare = with_graphs->allocations();
  CHECK(after_prepare <= 3);

  a->run(in.data(), out_a.data());
  DeviceBackend& dev = device(*with_graphs);
  // Measured after the capture: instantiating a graph may take device memory on a GPU.
  const size_t free_after_first_run = dev.memory_info().free;
  CHECK(dev.captures() == 1);
  CHECK(a->uses_graph());
  CHECK(dev.last_graph_nodes() >= a->graph().nodes().size());  // at least one launch per node
  for (int i = 0; i < 3; ++i) {
    std::vector<float> again(in.size());
    a->run(in.data(), again.data());
    CHECK(again == out_a);  // replays are deterministic
  }
  CHECK(dev.captures() == 1);
  CHECK(dev.replays() == 4);
  CHECK(with_graphs->allocations() == after_prepare);
  CHECK(dev.memory_info().free == free_after_first_run);

  b->run(in.data(), out_b.data());
  CHECK(device(*direct).captures() == 0);
  CHECK_FALSE(b->uses_graph());
  CHECK(out_a == out_b);  // the graph replays exactly the direct launches

  // A short batch: its own plan inside the same arena, its own graph, still no allocation.
  std::vector<float> one(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(in.size() / 2)), y1(one.size());
  a->run(1, one.data(), y1.data());
  a->run(1, one.data(), y1.data());
  CHECK(dev.captures() == 2);
  CHECK(with_graphs->allocations() == after_prepare);
  // Faces are independent: face 0 alone equals face 0 of the batch.
  CHECK(rel_error(y1, std::vector<float>(out_a.begin(), out_a.begin() + static_cast<std::ptrdiff_t>(y1.size()))) <
        1e-6);

  // A profiled run (gpen bench --profile): every node timed with events, launched directly (no
  // capture, no allocation), and the replayed runs after it unchanged.
  const std::vector<double> ms = a->run_profiled(in.data());
  CHECK(ms.size() == a->graph().nodes().size());
  for (double t : ms) CHECK(t >= 0.0);
  CHECK(dev.captures() == 2);
  CHECK(with_graphs->allocations() == after_prepare);
  std::vector<float> after(in.size());
  a->run(in.data(), after.data());
  CHECK(after == out_a);
}

TEST_CASE("CUDA backend: a converted GPEN checkpoint (s32 fixture) matches PyTorch, from f32 and f16 files") {
  const std::string dir = gpen_test::fixture_dir() + "/gpen/s32/";
  npy::Array in = npy::load(dir + "input.npy"), ref = npy::load(dir + "output.npy");
  const int N = 1, S = static_cast<int>(in.shape[2]);  // the first face: enough, and fast under ASan
  const size_t plane = static_cast<size_t>(S) * S;
  std::vector<float> x(static_cast<size_t>(in.numel())), want(x.size());
  for (int n = 0; n < N; ++n)
    for (size_t p = 0; p < plane; ++p)
      for (int c = 0; c < 3; ++c) {
        x[(n * plane + p) * 3 + c] = in.data<float>()[(n * 3 + c) * plane + p];
        want[(n * plane + p) * 3 + c] = ref.data<float>()[(n * 3 + c) * plane + p];
      }
  // stored dtype -> run precision: the upload converts, so every pair works. A file stored in
  // f16 holds rounded weights, hence the fp16-level bound for it even when run in fp32.
  struct Case {
    DType stored, run;
    double tol;
  } cases[] = {{DType::f32, DType::f32, 1e-5}, {DType::f32, DType::f16, 5e-3}, {DType::f16, DType::f32, 5e-3}};
  for (const Case& c : cases) {
    const std::string name = std::string(dtype_name(c.stored)) + " file, " + dtype_name(c.run) + " run";
    CAPTURE(name);
    const std::string gpw =
        (fs::temp_directory_path() / ("gpen_test_cuda_backend_s32_" + std::to_string(::getpid()) + ".gpw")).string();
    conv::ConvertOptions opt;
    opt.dtype = c.stored;
    conv::convert(dir + "checkpoint.pth", gpw, opt);
    auto be = cuda_backend();
    auto m = GpenModel::open(gpw, *be, c.run);
    fs::remove(gpw);  // the weights are on the device; the file is not read again
    CHECK(m->precision() == c.run);
    std::vector<float> y = run_gpen(*m, N, x);
    const double e = rel_error(y, want);
    MESSAGE(name << ": relative error vs PyTorch " << e);
    CHECK(e < c.tol);
  }
}

TEST_CASE("CUDA backend: RetinaFace mobilenet0.25 matches the CPU backend") {
  const std::string pth = gpen_test::shared_dir() + "/models/retinaface-mobilenet0.25.pth";
  if (!fs::exists(pth)) {
    MESSAGE("skipped: " << pth << " not found");
    return;
  }
  const std::string gpw =
      (fs::temp_directory_path() / ("gpen_test_cuda_backend_" + std::to_string(::getpid()) + ".gpw")).string();
  conv::convert(pth, gpw);
  struct Cleanup {
    std::string p;
    ~Cleanup() { std::remove(p.c_str()); }
  } cleanup{gpw};

  const int h = 48, w = 40;  // odd level sizes: 6x5, 3x3, 2x2
  std::vector<float> x(static_cast<size_t>(h) * w * 3);
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> u(-120.f, 130.f);
  for (auto& v : x) v = u(rng);
  RetinaFaceDetector cpu(gpw);
  RetinaFaceDetector gpu(gpw, cuda_backend());
  CHECK(std::string(gpu.device()) == "cuda");
  auto r0 = cpu.run(x.data(), h, w);
  auto r1 = gpu.run(x.data(), h, w);
  // f32 throughout; only the summation order differs (<= 3*3*256 terms per output): measured
  // ~6e-7 relative.
  MESSAGE("RetinaFace relative errors: loc " << rel_error(r1.loc, r0.loc) << ", conf " << rel_error(r1.conf, r0.conf)
                                             << ", landms " << rel_error(r1.landms, r0.landms));
  CHECK(rel_error(r1.loc, r0.loc) < 1e-5);
  CHECK(rel_error(r1.conf, r0.conf) < 1e-5);
  CHECK(rel_error(r1.landms, r0.landms) < 1e-5);
}

TEST_CASE("device selection: parse, auto, and the errors when CUDA is unavailable") {
  CHECK(parse_device("cpu") == DeviceKind::cpu);
  CHECK(parse_device("cuda") == DeviceKind::cuda);
  CHECK(parse_device("auto") == DeviceKind::automatic);
  CHECK_THROWS_WITH_AS(parse_device("tpu"), "unknown --device 'tpu' (expected cpu, cuda or auto)", Error);
  CHECK(parse_precision("fp16") == DType::f16);
  CHECK(parse_precision("bf16") == DType::bf16);
  CHECK(parse_precision("fp32") == DType::f32);
  CHECK_THROWS_WITH_AS(parse_precision("int8"), "unknown --precision 'int8' (expected fp32, fp16 or bf16)", Error);

  DeviceOptions want_cuda;
  want_cuda.kind = DeviceKind::cuda;
  DeviceOptions want_auto;
  // Not compiled in.
  CHECK_THROWS_WITH_AS(make_backend(want_cuda, nullptr),
                       "CUDA support was not compiled in (rebuild with nvcc / -DGPEN_CUDA=ON)", Error);
  CHECK(std::string(make_backend(want_auto, nullptr)->name()) == "cpu");
  // This build's own answer.
  if (!cuda_compiled_in())
    CHECK_THROWS_WITH_AS(make_backend(want_cuda), "CUDA support was not compiled in (rebuild with nvcc / -DGPEN_CUDA=ON)",
                         Error);
  // Compiled in, with and without a device.
  const CudaProvider* p = &cuda::cuda_provider();
  CHECK(std::string(make_backend(want_cuda, p)->name()) == "cuda");
  CHECK(std::string(make_backend(want_auto, p)->name()) == "cuda");
  auto cpu = make_cpu_backend();
  CHECK(default_precision(*cpu) == DType::f32);
  CHECK(default_precision(*make_backend(want_cuda, p)) == DType::f16);
  // The CPU backend refuses 16-bit precision with a message naming it.
  CHECK_THROWS_WITH_AS(GpenModel::synthetic(small_gpen(DType::f16), *cpu), "the CPU backend runs fp32 only (precision fp16 asked)",
                       Error);
#if !defined(GPEN_CUDA_TESTS_NATIVE)
  cuda_emu::set_device_count(0);
  CHECK(cuda::device_count() == 0);
  CHECK_THROWS_WITH_AS(make_backend(want_cuda, p), "no CUDA device found", Error);
  CHECK(std::string(make_backend(want_auto, p)->name()) == "cpu");
  cuda_emu::set_device_count(1);
  CHECK(cudaGetLastError() == cudaSuccess);  // device_count() leaves no stale error behind
#endif
}

#if !defined(GPEN_CUDA_TESTS_NATIVE)
TEST_CASE("emulator: stream capture records launches and copies, refuses allocation, replays in order") {
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  const int n = 1000;
  float *a = nullptr, *b = nullptr, *y = nullptr, *host = nullptr;
  REQUIRE(cudaMalloc(&a, n * 4) == cudaSuccess);
  REQUIRE(cudaMalloc(&b, n * 4) == cudaSuccess);
  REQUIRE(cudaMalloc(&y, n * 4) == cudaSuccess);
  REQUIRE(cudaMallocHost(&host, n * 4) == cudaSuccess);
  for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i);
  const TensorView va = make_view(a, DType::f32, Shape{n}), vb = make_view(b, DType::f32, Shape{n}),
                   vy = make_view(y, DType::f32, Shape{n});

  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  cudaStreamCaptureStatus st{};
  CHECK(cudaStreamIsCapturing(s, &st) == cudaSuccess);
  CHECK(st == cudaStreamCaptureStatusActive);
  CHECK(cudaMemcpyAsync(a, host, n * 4, cudaMemcpyHostToDevice, s) == cudaSuccess);
  CHECK(cudaMemsetAsync(b, 0, n * 4, s) == cudaSuccess);
  cuda::add(AddParams{}, va, va, vb, s);  // b = 2a
  cuda::add(AddParams{}, va, vb, vy, s);  // y = 3a
  CHECK(cudaMemcpyAsync(host, y, n * 4, cudaMemcpyDeviceToHost, s) == cudaSuccess);
  // Nothing ran yet: the host buffer still holds its values.
  CHECK(host[7] == 7.0f);
  cudaGraph_t g = nullptr;
  REQUIRE(cudaStreamEndCapture(s, &g) == cudaSuccess);
  size_t nodes = 0;
  CHECK(cudaGraphGetNodes(g, nullptr, &nodes) == cudaSuccess);
  CHECK(nodes == 5);
  cudaGraphExec_t exec = nullptr;
  REQUIRE(cudaGraphInstantiate(&exec, g, 0) == cudaSuccess);
  CHECK(cudaGraphDestroy(g) == cudaSuccess);
  const size_t launches = cuda_emu::graph_launches();
  CHECK(cudaGraphLaunch(exec, s) == cudaSuccess);
  CHECK(host[7] == 21.0f);
  CHECK(cudaGraphLaunch(exec, s) == cudaSuccess);  // again: host now holds 3 * 3 * i
  CHECK(host[7] == 63.0f);
  CHECK(cuda_emu::graph_launches() == launches + 2);
  CHECK(cudaGraphExecDestroy(exec) == cudaSuccess);

  // Allocation and synchronisation are refused while capturing, and invalidate the capture.
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  void* p = nullptr;
  CHECK(cudaMalloc(&p, 64) == cudaErrorStreamCaptureUnsupported);
  CHECK(cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported);
  CHECK(cudaStreamIsCapturing(s, &st) == cudaSuccess);
  CHECK(st == cudaStreamCaptureStatusInvalidated);
  CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
  CHECK(g == nullptr);
  // A launch on the legacy stream while capturing is refused too.
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  CHECK_THROWS_AS(cuda::add(AddParams{}, va, va, vb, nullptr), Error);
  CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
  CHECK(g == nullptr);
  cudaGetLastError();
  // Out of capture everything works again.
  CHECK(cudaMalloc(&p, 64) == cudaSuccess);
  CHECK(cudaFree(p) == cudaSuccess);
  CHECK(cudaStreamEndCapture(s, &g) == cudaErrorIllegalState);
  cudaGetLastError();

  cudaFree(a);
  cudaFree(b);
  cudaFree(y);
  cudaFreeHost(host);
  cudaStreamDestroy(s);
}
#endif
