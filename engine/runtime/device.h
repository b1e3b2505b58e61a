#pragma once
// Choosing where a model runs: `--device cpu|cuda|auto` and `--precision fp32|fp16|bf16`, and the
// interface a device backend (CUDA) offers beyond engine/runtime/backend.h: graph capture and replay of an
// executor's launches, device memory figures, event timing, pinned host buffers.
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "engine/runtime/backend.h"
#include "engine/core/dtype.h"

namespace gpen {

class PipelineOps;  // engine/runtime/pipeline_ops.h

enum class DeviceKind { cpu, cuda, automatic };

// "cpu", "cuda", "auto"; gpen::Error naming the value otherwise.
DeviceKind parse_device(const std::string& s);
// "fp32", "fp16", "bf16" (also f32 / f16 / bfloat16 ...); gpen::Error otherwise.
DType parse_precision(const std::string& s);
// A --precision flag that may be empty: nullopt (the model's own default) when it is, else
// parse_precision.
std::optional<DType> parse_precision_flag(const std::string& s);
const char* precision_name(DType d);  // "fp32", "fp16", "bf16"

struct DeviceOptions {
  DeviceKind kind = DeviceKind::automatic;
  bool cuda_graphs = true;  // capture each prepared executor's launches once, then replay them
};

// A backend whose memory is not host memory. Executors and models find it with dynamic_cast.
class DeviceBackend : public Backend {
 public:
  // Stream capture: `enqueue` queues work on the backend's stream and is recorded, not run; the
  // returned handle replays it. Nothing may allocate or synchronise while it is recorded.
  virtual bool graphs_enabled() const = 0;
  virtual void* capture(const std::function<void()>& enqueue) = 0;
  virtual void replay(void* graph) = 0;
  virtual void destroy_graph(void* graph) noexcept = 0;
  size_t captures() const { return captures_; }
  size_t replays() const { return replays_; }
  size_t last_graph_nodes() const { return last_graph_nodes_; }

  // Page-locked host memory for staging copies (a copy from it is truly asynchronous, so the
  // caller must not rewrite it before the stream has consumed it; a download synchronises).
  virtual void* allocate_host(size_t bytes) = 0;
  virtual void release_host(void* p) noexcept = 0;

  struct MemoryInfo {
    size_t free = 0, total = 0;
  };
  virtual MemoryInfo memory_info() const = 0;
  virtual std::string device_name() const = 0;

  // Device time of the work queued on the backend's stream between start_timer and stop_timer
  // (events on the stream; stop_timer waits for the end event).
  virtual void start_timer() = 0;
  virtual double stop_timer_ms() = 0;

  // The photo pipeline's steps on this device and stream (engine/runtime/pipeline_ops.h), so a photo can
  // stay on the device from upload to result; nullptr when the backend has none (the pipeline then
  // runs them on the host).
  virtual PipelineOps* pipeline_ops() { return nullptr; }

 protected:
  size_t captures_ = 0, replays_ = 0, last_graph_nodes_ = 0;
};

// What engine/runtime/device.cpp needs from a CUDA build: the native one (GPEN_WITH_CUDA), or the host
// emulator's in tests (engine/runtime/cuda/backend_cuda.h has both).
struct CudaProvider {
  int (*device_count)() = nullptr;  // 0 when no device (or no driver)
  std::unique_ptr<Backend> (*make)(const DeviceOptions&) = nullptr;
  // What the backend's workspace_bytes returns for a node, computed on the host from shapes
  // alone: `gpen plan --device cuda` plans with it on machines without a GPU.
  size_t (*workspace_bytes)(const Graph&, const Node&) = nullptr;
};

bool cuda_compiled_in();
// The native CUDA build's provider, or nullptr when CUDA was not compiled in.
const CudaProvider* native_cuda();

// cpu: the CPU backend. cuda: the CUDA backend, or gpen::Error when `cuda` is null (not compiled
// in) or has no device. auto: CUDA when a device is present, else the CPU.
std::unique_ptr<Backend> make_backend(const DeviceOptions& o, const CudaProvider* cuda);
inline std::unique_ptr<Backend> make_backend(const DeviceOptions& o) { return make_backend(o, native_cuda()); }

// The precision a model runs at when none is asked for: fp16 on a device backend, fp32 on the CPU.
DType default_precision(const Backend& b);
inline bool is_device_backend(const Backend& b) { return dynamic_cast<const DeviceBackend*>(&b) != nullptr; }

}  // namespace gpen
