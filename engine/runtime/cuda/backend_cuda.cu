// The CUDA backend: device memory from cudaMalloc, copies and every kernel on one stream, graph
// capture of an executor's launches. Host code only; compiled by nvcc into gpen_cuda and as C++
// against the emulator (tests/cuda_emu) into gpen_cuda_emu.
#include "engine/runtime/cuda/backend_cuda.h"

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "kernels/cuda/compat.h"
#include "engine/runtime/cuda/pipeline_ops.h"
#include "engine/runtime/env_options.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/ops_gemm.h"
#include "kernels/cuda/ops_gfpgan.h"
#include "kernels/cuda/ops_transformer.h"
#include "kernels/cuda/ops_gpen.h"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

void check_cuda(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so that the next call does not see it
  throw Error("CUDA: " + what + ": " + cudaGetErrorString(e));
}

const TensorView* opt(std::span<const TensorView> in, size_t i) {
  return i < in.size() && in[i].data ? &in[i] : nullptr;
}

class CudaBackend final : public DeviceBackend {
 public:
  explicit CudaBackend(const DeviceOptions& o) : graphs_(o.cuda_graphs) {
    check_cuda(cudaGetDevice(&device_), "cudaGetDevice");
    // Non-blocking: the legacy default stream (used by nothing here) never serialises with it.
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check_cuda(cudaEventCreate(&t0_), "cudaEventCreate");
    check_cuda(cudaEventCreate(&t1_), "cudaEventCreate");
  }
  ~CudaBackend() override {
    cudaStreamSynchronize(stream_);
    for (auto& [p, n] : pinned_) cudaFreeHost(p);
    cudaEventDestroy(t0_);
    cudaEventDestroy(t1_);
    cudaStreamDestroy(stream_);
  }

  const char* name() const override { return "cuda"; }

  size_t workspace_bytes(const Graph& g, const Node& n) const override { return node_workspace_bytes(g, n); }

  void* allocate(size_t bytes) override {
    void* p = nullptr;
    // Exact sizes (cudaMalloc aligns to 256 bytes anyway): the emulator then reports overruns.
    const cudaError_t e = cudaMalloc(&p, std::max<size_t>(bytes, 1));
    if (e != cudaSuccess) {
      cudaGetLastError();
      MemoryInfo m = memory_info();
      throw Error("CUDA: cudaMalloc of " + std::to_string(bytes) + " bytes failed (" + cudaGetErrorString(e) +
                  "; " + std::to_string(m.free >> 20) + " MiB free of " + std::to_string(m.total >> 20) + " MiB)");
    }
    ++allocations_;
    return p;
  }
  void release(void* p) override {
    if (!p) return;
    cudaStreamSynchronize(stream_);  // nothing queued may still use it
    cudaFree(p);
  }

  void upload(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return;
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_), "upload");
    // From pinned memory the copy runs asynchronously and the caller keeps the buffer until the
    // stream passed it; from pageable memory wait, so the caller may free or rewrite its source.
    if (!is_pinned(src, bytes)) check_cuda(cudaStreamSynchronize(stream_), "upload");
  }
  void download(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return;
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_), "download");
    check_cuda(cudaStreamSynchronize(stream_), "download");
  }
  void synchronize() override { check_cuda(cudaStreamSynchronize(stream_), "stream synchronize"); }

  void run(const Node& n, std::span<const TensorView> in, std::span<const TensorView> out, void* ws) override {
    Stream s = stream_;
    std::visit(
        [&](const auto& p) {
          using P = std::decay_t<decltype(p)>;
          if constexpr (std::is_same_v<P, Conv2dParams>)
            conv2d(p, in[0], in[1], opt(in, 2), opt(in, 3), out[0], ws, s);
          else if constexpr (std::is_same_v<P, DenseParams>)
            dense(p, in[0], in[1], opt(in, 2), out[0], s);
          else if constexpr (std::is_same_v<P, BiasActParams>)
            bias_act(p, in[0], opt(in, 1), out[0], s);
          else if constexpr (std::is_same_v<P, AddParams>)
            add(p, in[0], in[1], out[0], s);
          else if constexpr (std::is_same_v<P, ResizeNearestParams>)
            resize_nearest(p, in[0], out[0], s);
          else if constexpr (std::is_same_v<P, UpFirDn2dParams>)
            upfirdn2d(p, in[0], opt(in, 1), opt(in, 2), out[0], ws, s);  // epilogue fused
          else if constexpr (std::is_same_v<P, SoftmaxParams>)
            softmax(p, in[0], out[0], s);
          else if constexpr (std::is_same_v<P, MaxPool2dParams>)
            max_pool2d(p, in[0], out[0], s);
          else if constexpr (std::is_same_v<P, PadReflectParams>)
            pad_reflect(p, in[0], out[0], s);
          else if constexpr (std::is_same_v<P, PixelNormParams>)
            pixel_norm(p, in[0], out[0], s);
          else if constexpr (std::is_same_v<P, PixelUnshuffleParams>)
            pixel_unshuffle(p, in[0], out[0], s);
          else if constexpr (std::is_same_v<P, DemodParams>)
            demod(p, in[0], in[1], out[0], s);
          else if constexpr (std::is_same_v<P, ModConvParams>) {
            ModConvArgs a{opt(in, 0), opt(in, 1), opt(in, 2), opt(in, 3), opt(in, 4),
                          opt(in, 5), opt(in, 6), opt(in, 7), opt(in, 8)};
            modconv(p, a, out[0], ws, s);
          } else if constexpr (std::is_same_v<P, ResizeBilinearParams>)
            resize_bilinear(p, in[0], out[0], s);
          else if constexpr (std::is_same_v<P, NoiseBiasActParams>)
            noise_bias_act(p, in[0], in[1], in[2], opt(in, 3), out[0], s);
          else if constexpr (std::is_same_v<P, SftParams>)
            sft(p, in[0], in[1], in[2], out[0], s);
          else if constexpr (std::is_same_v<P, GroupNormParams>)
            group_norm(p, in[0], opt(in, 1), opt(in, 2), out[0], s);
          else if constexpr (std::is_same_v<P, LayerNormParams>)
            layer_norm(p, in[0], opt(in, 1), opt(in, 2), out[0], s);
          else if constexpr (std::is_same_v<P, SmoothActParams>)
            smooth_act(p, in[0], out[0], s);
          else if constexpr (std::is_same_v<P, AttentionParams>)
            attention(p, {opt(in, 0), opt(in, 1), opt(in, 2), opt(in, 3), opt(in, 4), opt(in, 5), opt(in, 6)}, out[0], ws, s);
          else if constexpr (std::is_same_v<P, CodeLookupParams>)
            code_lookup(p, in[0], in[1], out[0], out[1], s);
          else if constexpr (std::is_same_v<P, FuseSftParams>)
            fuse_sft(p, in[0], in[1], in[2], out[0], s);
          else if constexpr (std::is_same_v<P, AdaInParams>)
            adain(p, in[0], in[1], out[0], s);
          else
            static_assert(sizeof(P) == 0, "CUDA backend misses an op");
        },
        n.params);
  }

  // ---- graphs
  bool graphs_enabled() const override { return graphs_; }

  void* capture(const std::function<void()>& enqueue) override {
    // ThreadLocal: this thread may not allocate or synchronise while capturing (it would be an
    // error, not a silent stall), other threads are unaffected.
    check_cuda(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    cudaGraph_t graph = nullptr;
    try {
      enqueue();
    } catch (...) {
      cudaStreamEndCapture(stream_, &graph);
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      throw;
    }
    check_cuda(cudaStreamEndCapture(stream_, &graph), "cudaStreamEndCapture");
    size_t nodes = 0;
    cudaGraphGetNodes(graph, nullptr, &nodes);
    cudaGraphExec_t exec = nullptr;
    const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    check_cuda(e, "cudaGraphInstantiate");
    ++captures_;
    last_graph_nodes_ = nodes;
    return exec;
  }
  void replay(void* graph) override {
    check_cuda(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), stream_), "cudaGraphLaunch");
    ++replays_;
  }
  void destroy_graph(void* graph) noexcept override {
    if (graph) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph));
  }

  // ---- host staging, memory, timing
  void* allocate_host(size_t bytes) override {
    void* p = nullptr;
    check_cuda(cudaMallocHost(&p, std::max<size_t>(bytes, 1)), "cudaMallocHost of " + std::to_string(bytes) + " bytes");
    pinned_.emplace_back(p, bytes);
    return p;
  }
  void release_host(void* p) noexcept override {
    auto it = std::find_if(pinned_.begin(), pinned_.end(), [p](const auto& e) { return e.first == p; });
    if (it == pinned_.end()) return;
    cudaStreamSynchronize(stream_);
    cudaFreeHost(p);
    pinned_.erase(it);
  }

  MemoryInfo memory_info() const override {
    MemoryInfo m;
    if (cudaMemGetInfo(&m.free, &m.total) != cudaSuccess) cudaGetLastError();
    return m;
  }
  std::string device_name() const override {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, device_) != cudaSuccess) {
      cudaGetLastError();
      return "CUDA device " + std::to_string(device_);
    }
    return p.name;
  }

  void start_timer() override { check_cuda(cudaEventRecord(t0_, stream_), "cudaEventRecord"); }
  double stop_timer_ms() override {
    check_cuda(cudaEventRecord(t1_, stream_), "cudaEventRecord");
    check_cuda(cudaEventSynchronize(t1_), "cudaEventSynchronize");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, t0_, t1_), "cudaEventElapsedTime");
    return ms;
  }

  PipelineOps* pipeline_ops() override {
    if (!pipeline_) pipeline_ = make_pipeline_ops(stream_);
    return pipeline_.get();
  }

 private:
  bool is_pinned(const void* p, size_t bytes) const {
    const char* c = static_cast<const char*>(p);
    for (const auto& [q, n] : pinned_) {
      const char* b = static_cast<const char*>(q);
      if (c >= b && c + bytes <= b + n) return true;
    }
    return false;
  }

  bool graphs_;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t t0_ = nullptr, t1_ = nullptr;
  std::vector<std::pair<void*, size_t>> pinned_;
  std::unique_ptr<PipelineOps> pipeline_;
};

}  // namespace

size_t node_workspace_bytes(const Graph& g, const Node& n) {
  if (auto* p = std::get_if<Conv2dParams>(&n.params))
    return conv2d_workspace_bytes(*p, g.tensor(n.inputs[0]).shape, g.tensor(n.outputs[0]).shape);
  if (auto* p = std::get_if<UpFirDn2dParams>(&n.params))
    return upfirdn2d_workspace_bytes(*p, g.tensor(n.inputs[0]).shape, g.tensor(n.outputs[0]).shape);
  if (auto* p = std::get_if<ModConvParams>(&n.params)) {
    Shape x = g.tensor(n.inputs[0]).shape;
    x[3] = g.tensor(n.inputs[4]).shape[2];  // the concatenated input channels, from the weight
    return modconv_workspace_bytes(*p, x, g.tensor(n.outputs[0]).shape);
  }
  if (auto* p = std::get_if<AttentionParams>(&n.params)) return attention_workspace_bytes(*p, g.tensor(n.inputs[0]).shape);
  return 0;
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

std::unique_ptr<Backend> make_cuda_backend(const DeviceOptions& o) {
  GPEN_CHECK(device_count() > 0, "no CUDA device found");
  if (const auto f = cuda_gemm_family_from_env()) set_gemm_family(*f);
  return std::make_unique<CudaBackend>(o);
}

const CudaProvider& cuda_provider() {
  static const CudaProvider p{&device_count, &make_cuda_backend, &node_workspace_bytes};
  return p;
}

GPEN_CUDA_NAMESPACE_END
