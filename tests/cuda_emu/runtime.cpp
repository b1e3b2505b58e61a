// The CUDA runtime subset of the emulator: device memory is host memory handed out by cudaMalloc
// and tracked, so that copies and kernel arguments can be checked against what a GPU would
// accept; streams run synchronously; errors follow CUDA's last-error / sticky-error rules. Stream
// capture records what is queued on a capturing stream; a graph replays the recording.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cuda_emu.h"
#include "checker.h"
#include "internal.h"

struct CUstream_st {
  unsigned flags = 0;
  // Capture state (cudaStreamBeginCapture .. EndCapture).
  bool capturing = false;
  bool invalidated = false;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::vector<cuda_emu::GraphOp> ops;
};

struct CUgraph_st {
  std::vector<cuda_emu::GraphOp> ops;
};

struct CUgraphExec_st {
  std::vector<cuda_emu::GraphOp> ops;
};

struct CUevent_st {
  std::chrono::steady_clock::time_point when{};
  bool recorded = false;
};

namespace cuda_emu {

namespace {

constexpr size_t kTotalDeviceBytes = size_t{16} << 30;  // what cudaMemGetInfo reports as total
constexpr size_t kAllocAlign = 256;                     // cudaMalloc's alignment guarantee

struct Allocation {
  size_t bytes;
  bool pinned;  // cudaMallocHost: host memory a kernel may also read
};

struct RuntimeState {
  std::mutex mu;
  std::map<uintptr_t, Allocation> allocations;
  size_t device_bytes = 0;
  std::set<CUstream_st*> streams;
  std::map<const void*, size_t> func_smem;
  cudaError_t sticky = cudaSuccess;
  std::string fault;
  int device_count = 1;
  size_t graph_launches = 0;
};

RuntimeState& state() {
  static RuntimeState s;
  return s;
}

thread_local cudaError_t t_last_error = cudaSuccess;
// The stream this thread captures in a mode that forbids unsafe calls (Global, ThreadLocal).
thread_local CUstream_st* t_capture = nullptr;

cudaError_t fail(cudaError_t e) {
  t_last_error = e;
  return e;
}

// An API a capturing thread may not call (allocation, synchronous copies, synchronisation): as in
// CUDA it fails and invalidates the capture. Returns true when the call must fail.
bool refuse_during_capture() {
  if (!t_capture) return false;
  t_capture->invalidated = true;
  fail(cudaErrorStreamCaptureUnsupported);
  return true;
}

// Whether [p, p + bytes) lies inside one allocation (device or pinned). Caller holds the lock.
bool inside_allocation(RuntimeState& s, const void* p, size_t bytes) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = s.allocations.upper_bound(a);
  if (it == s.allocations.begin()) return false;
  --it;
  return a >= it->first && a - it->first <= it->second.bytes && bytes <= it->second.bytes - (a - it->first);
}

cudaError_t allocate(void** p, size_t bytes, bool pinned) {
  if (!p) return fail(cudaErrorInvalidValue);
  *p = nullptr;
  if (bytes == 0) return cudaSuccess;
  RuntimeState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!pinned && bytes > kTotalDeviceBytes - s.device_bytes) return fail(cudaErrorMemoryAllocation);
  // Exactly `bytes`, not rounded up, so that AddressSanitizer flags a kernel that overruns the
  // requested size even where a GPU allocation would have slack.
  void* mem = nullptr;
  if (posix_memalign(&mem, kAllocAlign, bytes) != 0 || !mem) return fail(cudaErrorMemoryAllocation);
  // Fresh device memory is not zero on a GPU; all-ones bytes read as NaN in f32, f16 and bf16,
  // so a kernel that leaves outputs unwritten is caught by the comparisons.
  if (!pinned) std::memset(mem, 0xff, bytes);
  s.allocations[reinterpret_cast<uintptr_t>(mem)] = {bytes, pinned};
  if (!pinned) check::global_allocated(mem, bytes);
  if (!pinned) s.device_bytes += bytes;
  *p = mem;
  return cudaSuccess;
}

cudaError_t release(void* p, bool pinned) {
  if (!p) return cudaSuccess;
  RuntimeState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.allocations.find(reinterpret_cast<uintptr_t>(p));
  if (it == s.allocations.end() || it->second.pinned != pinned) return fail(cudaErrorInvalidValue);
  if (!pinned) s.device_bytes -= it->second.bytes;
  s.allocations.erase(it);
  if (!pinned) check::global_released(p);
  std::free(p);
  return cudaSuccess;
}

// The capturing stream `st`, or nullptr when st does not capture (or is no stream).
CUstream_st* capturing(cudaStream_t st) {
  if (!st) return nullptr;
  RuntimeState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.streams.count(st) && st->capturing ? st : nullptr;
}

// Checks the device side(s) of a copy the way the kind says they are.
cudaError_t check_copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (bytes == 0) return cudaSuccess;
  if (!dst || !src) return cudaErrorInvalidValue;
  const bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (kind > cudaMemcpyDefault) return cudaErrorInvalidMemcpyDirection;
  RuntimeState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (dst_dev && !inside_allocation(s, dst, bytes)) return cudaErrorInvalidValue;
  if (src_dev && !inside_allocation(s, src, bytes)) return cudaErrorInvalidValue;
  return cudaSuccess;
}

}  // namespace

namespace internal {

void set_last_error(cudaError_t e) { t_last_error = e; }

cudaError_t sticky_error() {
  RuntimeState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.sticky;
}

void record_fault(const std::string& message) {
  std::fprintf(stderr, "cuda_emu: %s\n", message.c_str());
  RuntimeState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.sticky = cudaErrorLaunchFailure;
  s.fault = message;
  t_last_error = cudaErrorLaunchFailure;
}

bool stream_valid(cudaStream_t st) {
  if (!st) return true;
  RuntimeState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.streams.count(st) != 0;
}

size_t max_dynamic_smem(const void* fn) {
  RuntimeState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.func_smem.find(fn);
  return it == s.func_smem.end() ? kDefaultDynamicSmem : it->second;
}

}  // namespace internal

std::string last_fault() {
  RuntimeState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.fault;
}

void clear_fault() {
  RuntimeState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.sticky = cudaSuccess;
  s.fault.clear();
  t_last_error = cudaSuccess;
}

bool is_device_accessible(const void* p) {
  RuntimeState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return inside_allocation(s, p, 0);
}

bool internal::allocation_range(const void* p, uintptr_t& lo, uintptr_t& hi, bool* pinned) {
  RuntimeState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = s.allocations.upper_bound(a);
  if (it == s.allocations.begin()) return false;
  --it;
  if (a < it->first || a - it->first >= it->second.bytes) return false;
  lo = it->first;
  hi = it->first + it->second.bytes;
  if (pinned) *pinned = it->second.pinned;
  return true;
}

size_t device_bytes_in_use() {
  RuntimeState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.device_bytes;
}

void set_device_count(int n) {
  RuntimeState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.device_count = std::max(0, n);
}

size_t graph_launches() {
  RuntimeState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.graph_launches;
}

CaptureAction capture_action(cudaStream_t st) {
  if (capturing(st)) return CaptureAction::record;
  if (!st && t_capture) {
    // The legacy stream synchronises with every other stream, the capturing one included.
    t_capture->invalidated = true;
    fail(cudaErrorStreamCaptureImplicit);
    return CaptureAction::refuse;
  }
  return CaptureAction::run;
}

void record_op(cudaStream_t st, GraphOp op) {
  if (!op) {
    st->invalidated = true;
    return;
  }
  st->ops.push_back(std::move(op));
}

void set_func_max_dynamic_smem(const void* fn, int bytes) {
  RuntimeState& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.func_smem[fn] = std::min<size_t>(static_cast<size_t>(bytes), internal::kMaxDynamicSmemOptin);
}

bool check_pointer_argument(const void* p, int index, const char* kernel) {
  if (!p || is_device_accessible(p)) return true;
  internal::record_fault(std::string("kernel ") + kernel + ": pointer argument " + std::to_string(index) +
                         " is not device memory (a GPU would fault reading it)");
  return false;
}

}  // namespace cuda_emu

using cuda_emu::RuntimeState;

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureImplicit: return "cudaErrorStreamCaptureImplicit";
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorLaunchFailure: return "unspecified launch failure (emulated kernel fault)";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureImplicit: return "operation would make the legacy stream depend on a capturing blocking stream";
  }
  return "unknown error";
}

cudaError_t cudaGetLastError() {
  const cudaError_t e = cuda_emu::t_last_error;
  // A sticky fault stays; other errors are cleared by reading them, as in CUDA.
  cuda_emu::t_last_error = cuda_emu::internal::sticky_error();
  return e;
}

cudaError_t cudaPeekAtLastError() { return cuda_emu::t_last_error; }

cudaError_t cudaGetDeviceCount(int* n) {
  if (!n) return cuda_emu::fail(cudaErrorInvalidValue);
  {
    RuntimeState& s = cuda_emu::state();
    std::lock_guard<std::mutex> lock(s.mu);
    *n = s.device_count;
  }
  return *n ? cudaSuccess : cuda_emu::fail(cudaErrorNoDevice);
}

cudaError_t cudaGetDevice(int* d) {
  if (!d) return cuda_emu::fail(cudaErrorInvalidValue);
  *d = 0;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cuda_emu::fail(cudaErrorInvalidDevice); }

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d) {
  if (!p) return cuda_emu::fail(cudaErrorInvalidValue);
  if (d != 0) return cuda_emu::fail(cudaErrorInvalidDevice);
  *p = cudaDeviceProp{};
  std::snprintf(p->name, sizeof p->name, "%s", "cuda_emu (host emulation)");
  p->totalGlobalMem = cuda_emu::kTotalDeviceBytes;
  p->sharedMemPerBlock = cuda_emu::internal::kDefaultDynamicSmem;
  p->sharedMemPerBlockOptin = cuda_emu::internal::kMaxDynamicSmemOptin;
  p->warpSize = 32;
  p->maxThreadsPerBlock = cuda_emu::internal::kMaxThreadsPerBlock;
  p->maxThreadsDim[0] = 1024, p->maxThreadsDim[1] = 1024, p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 0x7fffffff, p->maxGridSize[1] = 65535, p->maxGridSize[2] = 65535;
  p->major = 8;
  p->minor = 0;
  p->multiProcessorCount = cuda_emu::worker_threads();
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  if (cuda_emu::refuse_during_capture()) return cudaErrorStreamCaptureUnsupported;
  const cudaError_t e = cuda_emu::internal::sticky_error();
  return e == cudaSuccess ? e : cuda_emu::fail(e);
}

cudaError_t cudaDeviceReset() {
  cuda_emu::clear_fault();
  return cudaSuccess;
}

// Allocation during a capture is refused: a captured graph must find its memory already there.
cudaError_t cudaMalloc(void** p, size_t bytes) {
  if (cuda_emu::refuse_during_capture()) return cudaErrorStreamCaptureUnsupported;
  return cuda_emu::allocate(p, bytes, false);
}
cudaError_t cudaMallocHost(void** p, size_t bytes) {
  if (cuda_emu::refuse_during_capture()) return cudaErrorStreamCaptureUnsupported;
  return cuda_emu::allocate(p, bytes, true);
}
cudaError_t cudaFree(void* p) {
  if (cuda_emu::refuse_during_capture()) return cudaErrorStreamCaptureUnsupported;
  return cuda_emu::release(p, false);
}
cudaError_t cudaFreeHost(void* p) {
  if (cuda_emu::refuse_during_capture()) return cudaErrorStreamCaptureUnsupported;
  return cuda_emu::release(p, true);
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (!free_bytes || !total_bytes) return cuda_emu::fail(cudaErrorInvalidValue);
  *total_bytes = cuda_emu::kTotalDeviceBytes;
  *free_bytes = cuda_emu::kTotalDeviceBytes - cuda_emu::device_bytes_in_use();
  return cudaSuccess;
}

namespace cuda_emu {
namespace {

cudaError_t copy_now(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (const cudaError_t e = internal::sticky_error(); e != cudaSuccess) return fail(e);
  if (const cudaError_t e = check_copy(dst, src, bytes, kind); e != cudaSuccess) return fail(e);
  if (bytes) std::memmove(dst, src, bytes);
  if (bytes) check::global_written(dst, bytes);  // ignores host memory
  return cudaSuccess;
}

cudaError_t set_now(void* p, int value, size_t bytes) {
  if (const cudaError_t e = internal::sticky_error(); e != cudaSuccess) return fail(e);
  if (bytes == 0) return cudaSuccess;
  {
    RuntimeState& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    if (!p || !inside_allocation(s, p, bytes)) return fail(cudaErrorInvalidValue);
  }
  std::memset(p, value, bytes);
  check::global_written(p, bytes);
  return cudaSuccess;
}

// Queues `op` on stream st: recorded when st captures, refused on the legacy stream while this
// thread captures, run now otherwise (streams are synchronous here).
cudaError_t enqueue(cudaStream_t st, GraphOp op, cudaError_t check_now) {
  if (!internal::stream_valid(st)) return fail(cudaErrorInvalidResourceHandle);
  switch (capture_action(st)) {
    case CaptureAction::refuse: return cudaErrorStreamCaptureImplicit;
    case CaptureAction::record:
      // Arguments are checked as they are captured; a bad one invalidates the capture.
      if (check_now != cudaSuccess) {
        record_op(st, nullptr);
        return fail(check_now);
      }
      record_op(st, std::move(op));
      return cudaSuccess;
    case CaptureAction::run: break;
  }
  return op(st);
}

}  // namespace
}  // namespace cuda_emu

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (cuda_emu::refuse_during_capture()) return cudaErrorStreamCaptureUnsupported;
  return cuda_emu::copy_now(dst, src, bytes, kind);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
  return cuda_emu::enqueue(
      s, [=](cudaStream_t) { return cuda_emu::copy_now(dst, src, bytes, kind); },
      cuda_emu::check_copy(dst, src, bytes, kind));
}

cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  if (cuda_emu::refuse_during_capture()) return cudaErrorStreamCaptureUnsupported;
  return cuda_emu::set_now(p, value, bytes);
}

cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t s) {
  cudaError_t check = cudaSuccess;
  if (bytes && (!p || !cuda_emu::is_device_accessible(p))) check = cudaErrorInvalidValue;
  return cuda_emu::enqueue(
      s, [=](cudaStream_t) { return cuda_emu::set_now(p, value, bytes); }, check);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* st, unsigned flags) {
  if (!st) return cuda_emu::fail(cudaErrorInvalidValue);
  *st = new CUstream_st;
  (*st)->flags = flags;
  RuntimeState& s = cuda_emu::state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.streams.insert(*st);
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* st) { return cudaStreamCreateWithFlags(st, cudaStreamDefault); }

cudaError_t cudaStreamDestroy(cudaStream_t st) {
  RuntimeState& s = cuda_emu::state();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!st || s.streams.erase(st) == 0) return cuda_emu::fail(cudaErrorInvalidResourceHandle);
  }
  if (cuda_emu::t_capture == st) cuda_emu::t_capture = nullptr;
  delete st;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t st) {
  if (!cuda_emu::internal::stream_valid(st)) return cuda_emu::fail(cudaErrorInvalidResourceHandle);
  if (CUstream_st* c = cuda_emu::capturing(st)) {
    c->invalidated = true;
    return cuda_emu::fail(cudaErrorStreamCaptureUnsupported);
  }
  return cudaDeviceSynchronize();
}

cudaError_t cudaStreamBeginCapture(cudaStream_t st, cudaStreamCaptureMode mode) {
  // The legacy stream cannot be captured.
  if (!st || !cuda_emu::internal::stream_valid(st)) return cuda_emu::fail(cudaErrorInvalidResourceHandle);
  if (st->capturing || (mode != cudaStreamCaptureModeRelaxed && cuda_emu::t_capture))
    return cuda_emu::fail(cudaErrorIllegalState);
  st->capturing = true;
  st->invalidated = false;
  st->mode = mode;
  st->ops.clear();
  if (mode != cudaStreamCaptureModeRelaxed) cuda_emu::t_capture = st;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t st, cudaGraph_t* graph) {
  if (!graph) return cuda_emu::fail(cudaErrorInvalidValue);
  *graph = nullptr;
  if (!st || !cuda_emu::internal::stream_valid(st)) return cuda_emu::fail(cudaErrorInvalidResourceHandle);
  if (!st->capturing) return cuda_emu::fail(cudaErrorIllegalState);
  st->capturing = false;
  if (cuda_emu::t_capture == st) cuda_emu::t_capture = nullptr;
  std::vector<cuda_emu::GraphOp> ops = std::move(st->ops);
  st->ops.clear();
  if (st->invalidated) return cuda_emu::fail(cudaErrorStreamCaptureInvalidated);
  *graph = new CUgraph_st{std::move(ops)};
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t st, cudaStreamCaptureStatus* status) {
  if (!status) return cuda_emu::fail(cudaErrorInvalidValue);
  if (st && !cuda_emu::internal::stream_valid(st)) return cuda_emu::fail(cudaErrorInvalidResourceHandle);
  *status = !st || !st->capturing ? cudaStreamCaptureStatusNone
            : st->invalidated     ? cudaStreamCaptureStatusInvalidated
                                  : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  if (!graph || !count || nodes) return cuda_emu::fail(cudaErrorInvalidValue);
  *count = graph->ops.size();
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  if (!exec || !graph || flags != 0) return cuda_emu::fail(cudaErrorInvalidValue);
  if (cuda_emu::refuse_during_capture()) return cudaErrorStreamCaptureUnsupported;
  *exec = new CUgraphExec_st{graph->ops};
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t st) {
  if (!exec) return cuda_emu::fail(cudaErrorInvalidValue);
  if (!cuda_emu::internal::stream_valid(st)) return cuda_emu::fail(cudaErrorInvalidResourceHandle);
  if (cuda_emu::capturing(st)) return cuda_emu::fail(cudaErrorStreamCaptureUnsupported);  // no child graphs here
  if (const cudaError_t e = cuda_emu::internal::sticky_error(); e != cudaSuccess) return cuda_emu::fail(e);
  {
    RuntimeState& s = cuda_emu::state();
    std::lock_guard<std::mutex> lock(s.mu);
    ++s.graph_launches;
  }
  for (const cuda_emu::GraphOp& op : exec->ops) {
    // A failing node ends the replay; a kernel fault is sticky, as after a real graph launch.
    if (const cudaError_t e = op(st); e != cudaSuccess) return e;
    if (const cudaError_t e = cuda_emu::internal::sticky_error(); e != cudaSuccess) return cuda_emu::fail(e);
  }
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  if (!exec) return cuda_emu::fail(cudaErrorInvalidValue);
  delete exec;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  if (!graph) return cuda_emu::fail(cudaErrorInvalidValue);
  delete graph;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* e) {
  if (!e) return cuda_emu::fail(cudaErrorInvalidValue);
  *e = new CUevent_st;
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
  if (!e) return cuda_emu::fail(cudaErrorInvalidResourceHandle);
  delete e;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t st) {
  if (!e) return cuda_emu::fail(cudaErrorInvalidResourceHandle);
  return cuda_emu::enqueue(
      st,
      [e](cudaStream_t) {
        e->when = std::chrono::steady_clock::now();
        e->recorded = true;
        return cudaSuccess;
      },
      cudaSuccess);
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  if (cuda_emu::refuse_during_capture()) return cudaErrorStreamCaptureUnsupported;
  return e ? cudaSuccess : cuda_emu::fail(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!ms || !start || !end) return cuda_emu::fail(cudaErrorInvalidValue);
  if (!start->recorded || !end->recorded) return cuda_emu::fail(cudaErrorInvalidResourceHandle);
  *ms = std::chrono::duration<float, std::milli>(end->when - start->when).count();
  return cudaSuccess;
}
