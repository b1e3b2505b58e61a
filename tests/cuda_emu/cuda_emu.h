#pragma once
// Host emulation of the CUDA subset the project's kernels use, so that kernels/cuda/*.cu compile
// unchanged as C++ (with GPEN_CUDA_EMU defined) and run on the CPU in tests.
//
// Execution model: a launch runs its blocks one after another on the calling OS thread (or on a
// few worker threads, see set_worker_threads). Each thread of a block is a fiber (Boost.Context)
// with its own stack; a scheduler resumes the block's fibers round-robin and each runs until it
// reaches a barrier:
//  - __syncthreads() waits for every thread of the block; if some thread has exited while others
//    wait, or nothing can make progress, the kernel faults with a message naming the cause;
//  - warp operations (shuffles, votes, __syncwarp) wait for the lanes named in their mask;
//  - shared memory (GPEN_SHARED, GPEN_DYNAMIC_SMEM) lives in an arena per OS thread, and an OS
//    thread runs one block at a time, so every block sees its own shared memory; it is filled
//    with 0xff at every block start (tests/cuda_emu/checker.h).
// A fault (deadlock, divergent barrier, bad shuffle, misaligned WMMA pointer, a host pointer
// passed to a kernel...) stops the launch, prints the reason to stderr and becomes a sticky
// cudaErrorLaunchFailure, as a device fault would on a GPU.
// Streams execute synchronously at launch; events hold host timestamps. A stream in capture mode
// (cudaStreamBeginCapture) records launches, copies and event records instead of running them;
// cudaGraphLaunch replays the recording in order.
#include <math.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "half.h"

// ---- Qualifiers
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
// Static shared memory: `GPEN_SHARED(__align__(16) float, tile, [2][64]);` declares the array
// `tile` (`__shared__ __align__(16) float tile[2][64];` under nvcc). Here it is a reference into
// the block's shared-memory arena (poisoned at every block start, checked under
// GPEN_CUDA_EMU_CHECK); the lambda gives every declaration, and every template instance, its key.
#define GPEN_SHARED(T, name, dims)                                                                        \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wattributes\"")                     \
  using gpen_shared_t_##name = T dims; /* the arena aligns every array to 128 bytes */                  \
  _Pragma("GCC diagnostic pop")                                                                           \
  gpen_shared_t_##name& name = *static_cast<gpen_shared_t_##name*>(::cuda_emu::static_smem(              \
      [] {                                                                                                \
        static const char key = 0;                                                                        \
        return &key;                                                                                      \
      }(),                                                                                                \
      sizeof(gpen_shared_t_##name), #name))
// A plain __shared__ declaration would escape the arena and the checker.
#define __shared__ static_assert(false, "declare shared memory with GPEN_SHARED (kernels/cuda/compat.h)");
// Dynamic shared memory: `GPEN_DYNAMIC_SMEM(float, tile);` declares `float* tile` pointing at the
// launch's dynamic shared memory (extern __shared__ under nvcc).
#define GPEN_DYNAMIC_SMEM(T, name) T* name = reinterpret_cast<T*>(::cuda_emu::dynamic_smem())

// ---- Built-in vector types and coordinates
struct uint3 {
  unsigned x, y, z;
};

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

struct __align__(8) float2 { float x, y; };
struct __align__(16) float4 { float x, y, z, w; };
struct __align__(8) int2 { int x, y; };
struct __align__(16) int4 { int x, y, z, w; };
struct __align__(8) uint2 { unsigned x, y; };
struct __align__(16) uint4 { unsigned x, y, z, w; };
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline int2 make_int2(int x, int y) { return {x, y}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }

constexpr int warpSize = 32;

namespace cuda_emu {

// The coordinates of the emulated thread that runs now; the scheduler sets them before it
// resumes a fiber.
struct Coords {
  uint3 tid{0, 0, 0};
  uint3 bid{0, 0, 0};
  dim3 bdim;
  dim3 gdim;
  unsigned lane = 0;
  unsigned warp = 0;
};
// This OS thread's Coords, like glibc's __errno_location: `const` because the address never
// changes for a thread (the fibers of a block stay on one OS thread), so the compiler may keep
// it while still re-reading the values after every barrier. Kernel code must not touch the
// thread_local directly: GCC tests the flags of the `add` that forms a TLS address for
// UBSan's null check, and the linker may relax that `add` into a flag-less `lea`.
Coords* coords_location() noexcept __attribute__((const, returns_nonnull));

}  // namespace cuda_emu

#define threadIdx (static_cast<const uint3&>(::cuda_emu::coords_location()->tid))
#define blockIdx (static_cast<const uint3&>(::cuda_emu::coords_location()->bid))
#define blockDim (static_cast<const dim3&>(::cuda_emu::coords_location()->bdim))
#define gridDim (static_cast<const dim3&>(::cuda_emu::coords_location()->gdim))

// ---- Runtime API subset (tests/cuda_emu/runtime.cpp). C++ linkage on purpose: a build that
// also links the real libcudart (CUDA compiled in, tests emulated) sees no symbol clash.
enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorIllegalState = 401,
  cudaErrorNotReady = 600,
  cudaErrorLaunchFailure = 719,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
  cudaErrorStreamCaptureImplicit = 906,
};
typedef cudaError cudaError_t;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
};

struct CUstream_st;
typedef CUstream_st* cudaStream_t;
struct CUevent_st;
typedef CUevent_st* cudaEvent_t;
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01

// CUDA graphs, built by stream capture only (no explicit node API).
struct CUgraph_st;
typedef CUgraph_st* cudaGraph_t;
struct CUgraphExec_st;
typedef CUgraphExec_st* cudaGraphExec_t;
struct CUgraphNode_st;
typedef CUgraphNode_st* cudaGraphNode_t;
enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2,
};
enum cudaStreamCaptureStatus {
  cudaStreamCaptureStatusNone = 0,
  cudaStreamCaptureStatusActive = 1,
  cudaStreamCaptureStatusInvalidated = 2,
};

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  size_t sharedMemPerBlockOptin;
  int warpSize;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int major;
  int minor;
  int multiProcessorCount;
};

const char* cudaGetErrorString(cudaError_t e);
const char* cudaGetErrorName(cudaError_t e);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
cudaError_t cudaGetDeviceCount(int* n);
cudaError_t cudaGetDevice(int* d);
cudaError_t cudaSetDevice(int d);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaDeviceReset();
cudaError_t cudaMalloc(void** p, size_t bytes);
cudaError_t cudaMallocHost(void** p, size_t bytes);
cudaError_t cudaFree(void* p);
cudaError_t cudaFreeHost(void* p);
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s = nullptr);
cudaError_t cudaMemset(void* p, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t s = nullptr);
cudaError_t cudaStreamCreate(cudaStream_t* s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaEventCreate(cudaEvent_t* e);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);
// Capture: while a stream captures, the work queued on it is recorded, not run. As in CUDA, a
// capturing thread (modes Global and ThreadLocal) may not call unsafe APIs (cudaMalloc, cudaFree,
// synchronous copies, synchronisation): they fail with cudaErrorStreamCaptureUnsupported and
// invalidate the capture, so EndCapture returns cudaErrorStreamCaptureInvalidated.
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph);
cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus* status);
// nodes == nullptr: *count receives the number of nodes (the only form emulated).
cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags = 0);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);

template <class T>
cudaError_t cudaMalloc(T** p, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(p), bytes);
}
template <class T>
cudaError_t cudaMallocHost(T** p, size_t bytes) {
  return cudaMallocHost(reinterpret_cast<void**>(p), bytes);
}

namespace cuda_emu {

// ---- Emulator-only controls (not part of CUDA)
// Number of OS threads that run the blocks of a grid (default: GPEN_CUDA_EMU_THREADS or 1).
void set_worker_threads(int n);
int worker_threads();
// The message of the last kernel fault ("" if none) and a reset of the sticky fault state.
std::string last_fault();
void clear_fault();
// Whether p lies in memory a kernel may dereference (cudaMalloc / cudaMallocHost).
bool is_device_accessible(const void* p);
// Bytes currently allocated with cudaMalloc.
size_t device_bytes_in_use();
void set_func_max_dynamic_smem(const void* fn, int bytes);
// What cudaGetDeviceCount reports (default 1; 0 makes it fail with cudaErrorNoDevice, as on a
// machine without a GPU), so tests can exercise the "no device" paths.
void set_device_count(int n);
// The checks of GPEN_CUDA_EMU_CHECK ("race,sync,init", "all", "none"; docs/cuda.md "Checker"),
// set from a test; not while a kernel runs.
void set_checks(const char* spec);
// Graph replays (cudaGraphLaunch calls) and operations replayed so far, for tests.
size_t graph_launches();

// ---- Used by the device-side functions below (tests/cuda_emu/scheduler.cpp)
void syncthreads();
int syncthreads_count(int predicate);
// Publishes `value` for this lane, waits for every lane of `mask`, returns the value lane `src`
// published. `op` names the intrinsic for diagnostics.
uint64_t warp_shuffle(unsigned mask, uint64_t value, unsigned src, const char* op);
// Waits like warp_shuffle and gathers `bytes` (<= kGatherBytes) from every lane of `mask`: lane
// l's bytes land at all + l * bytes (zeros for lanes outside the round). Returns the lanes that
// took part. For the warp-collective PTX instructions (ptx_emu.h).
constexpr size_t kGatherBytes = 64;
unsigned warp_gather(unsigned mask, const void* mine, size_t bytes, void* all, const char* op);
// Waits like warp_shuffle and returns the ballot of `predicate` over the lanes of `mask`.
unsigned warp_vote(unsigned mask, bool predicate, const char* op);
unsigned warp_live_lanes();
void* dynamic_smem();
// The block's copy of the static shared array declared at `key` (GPEN_SHARED).
void* static_smem(const void* key, size_t bytes, const char* name);
// Stops the running kernel with a message (from kernel code, e.g. the WMMA checks).
[[noreturn]] void fault(const std::string& message);

template <class T>
T shuffle_value(unsigned mask, T v, unsigned src, const char* op) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "warp shuffles move at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  bits = warp_shuffle(mask, bits, src, op);
  T r;
  std::memcpy(&r, &bits, sizeof(T));
  return r;
}

inline unsigned shuffle_segment_base(int width, const char* op) {
  if (width <= 0 || width > 32 || (width & (width - 1)) != 0)
    fault(std::string(op) + ": width " + std::to_string(width) + " is not a power of two in 1..32");
  return coords_location()->lane & ~static_cast<unsigned>(width - 1);
}

// ---- Launch
using KernelBody = void (*)(const void* ctx);
struct LaunchConfig {
  dim3 grid, block;
  size_t smem = 0;
  cudaStream_t stream = nullptr;
  const char* name = "";
  const void* fn = nullptr;
};
// Runs body(ctx) as every thread of every block; errors go to cudaGetLastError like a launch's.
void launch(const LaunchConfig& cfg, KernelBody body, const void* ctx);
// The checks a launch makes of its configuration before running: cudaSuccess, or the error, which
// also becomes the last error.
cudaError_t validate_launch(const LaunchConfig& cfg);

// ---- Stream capture
// One recorded operation; replayed on the stream the graph is launched on.
using GraphOp = std::function<cudaError_t(cudaStream_t)>;
enum class CaptureAction { run, record, refuse };
// What work queued on `s` now does: run (no capture), record (s captures) or refuse (a launch on
// the legacy stream while this thread captures; the error is set and the capture invalidated).
CaptureAction capture_action(cudaStream_t s);
// Appends an operation to the capture of s (capture_action(s) == record); a null op marks the
// capture invalidated (an operation failed while it was recorded).
void record_op(cudaStream_t s, GraphOp op);
// Faults the launch when a pointer argument points to memory a GPU kernel could not read.
bool check_pointer_argument(const void* p, int index, const char* kernel);

template <class T>
bool check_argument(const T& v, int index, const char* kernel) {
  if constexpr (std::is_pointer_v<T>) {
    return check_pointer_argument(static_cast<const void*>(v), index, kernel);
  } else {
    (void)v, (void)index, (void)kernel;
    return true;
  }
}

template <class... P>
struct KernelLauncher {
  LaunchConfig cfg;
  void (*kernel)(P...);

  using Params = std::tuple<std::decay_t<P>...>;

  template <class... A>
  void operator()(A&&... args) const {
    static_assert(sizeof...(A) == sizeof...(P), "kernel launched with the wrong number of arguments");
    // Arguments are converted to the parameter types once, as a launch does; each emulated thread
    // then receives its own copy.
    const Params params(std::forward<A>(args)...);
    switch (capture_action(cfg.stream)) {
      case CaptureAction::run: run(cfg, kernel, params); return;
      case CaptureAction::refuse: return;
      case CaptureAction::record: break;
    }
    // Captured: the configuration is checked now (as cudaLaunchKernel does during capture) and
    // the launch, with a copy of its arguments, runs at every replay.
    if (validate_launch(cfg) != cudaSuccess) {
      record_op(cfg.stream, nullptr);  // a failed launch invalidates the capture
      return;
    }
    record_op(cfg.stream, [c = cfg, k = kernel, params](cudaStream_t st) {
      LaunchConfig at = c;
      at.stream = st;
      run(at, k, params);
      // The configuration passed at capture; a fault is sticky and ends the replay there.
      return cudaSuccess;
    });
  }

  static void run(const LaunchConfig& cfg, void (*kernel)(P...), const Params& params) {
    bool ok = true;
    std::apply([&](const auto&... v) {
      int i = 0;
      ((ok = check_argument(v, i++, cfg.name) && ok), ...);
    }, params);
    if (!ok) return;
    struct Ctx {
      void (*kernel)(P...);
      const Params* params;
    } ctx{kernel, &params};
    launch(cfg, [](const void* c) {
      const Ctx* x = static_cast<const Ctx*>(c);
      std::apply(x->kernel, *x->params);
    }, &ctx);
  }
};

template <class... P>
KernelLauncher<P...> make_launcher(dim3 grid, dim3 block, size_t smem, cudaStream_t stream, const char* name,
                                   void (*kernel)(P...)) {
  return {LaunchConfig{grid, block, smem, stream, name, reinterpret_cast<const void*>(kernel)}, kernel};
}

}  // namespace cuda_emu

template <class... P>
cudaError_t cudaFuncSetAttribute(void (*fn)(P...), cudaFuncAttribute attr, int value) {
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || value < 0) return cudaErrorInvalidValue;
  ::cuda_emu::set_func_max_dynamic_smem(reinterpret_cast<const void*>(fn), value);
  return cudaSuccess;
}

// ---- Synchronisation, warp shuffles and votes
inline void __syncthreads() { ::cuda_emu::syncthreads(); }
inline int __syncthreads_count(int p) { return ::cuda_emu::syncthreads_count(p); }
inline int __syncthreads_and(int p) {
  const dim3 b = ::cuda_emu::coords_location()->bdim;
  return ::cuda_emu::syncthreads_count(p) == static_cast<int>(b.x * b.y * b.z);
}
inline int __syncthreads_or(int p) { return ::cuda_emu::syncthreads_count(p) != 0; }
inline void __syncwarp(unsigned mask = 0xffffffffu) { ::cuda_emu::warp_vote(mask, false, "__syncwarp"); }
inline unsigned __activemask() { return ::cuda_emu::warp_live_lanes(); }

template <class T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize) {
  const unsigned base = ::cuda_emu::shuffle_segment_base(width, "__shfl_sync");
  const unsigned src = base + (static_cast<unsigned>(src_lane) & static_cast<unsigned>(width - 1));
  return ::cuda_emu::shuffle_value(mask, var, src, "__shfl_sync");
}
template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  const unsigned base = ::cuda_emu::shuffle_segment_base(width, "__shfl_up_sync");
  const unsigned lane = ::cuda_emu::coords_location()->lane;
  const unsigned src = lane - base >= delta ? lane - delta : lane;
  return ::cuda_emu::shuffle_value(mask, var, src, "__shfl_up_sync");
}
template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  const unsigned base = ::cuda_emu::shuffle_segment_base(width, "__shfl_down_sync");
  const unsigned lane = ::cuda_emu::coords_location()->lane;
  const unsigned src = lane - base + delta < static_cast<unsigned>(width) ? lane + delta : lane;
  return ::cuda_emu::shuffle_value(mask, var, src, "__shfl_down_sync");
}
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize) {
  // Lanes may read earlier segments but not later ones (PTX shfl.bfly clamps at the segment end).
  const unsigned base = ::cuda_emu::shuffle_segment_base(width, "__shfl_xor_sync");
  const unsigned lane = ::cuda_emu::coords_location()->lane;
  unsigned src = lane ^ static_cast<unsigned>(lane_mask);
  if (src > base + static_cast<unsigned>(width) - 1) src = lane;
  return ::cuda_emu::shuffle_value(mask, var, src, "__shfl_xor_sync");
}
inline unsigned __ballot_sync(unsigned mask, int p) { return ::cuda_emu::warp_vote(mask, p != 0, "__ballot_sync"); }
inline int __any_sync(unsigned mask, int p) { return ::cuda_emu::warp_vote(mask, p != 0, "__any_sync") != 0; }
inline int __all_sync(unsigned mask, int p) {
  const unsigned votes = ::cuda_emu::warp_vote(mask, p != 0, "__all_sync");
  return votes == (mask & ::cuda_emu::warp_live_lanes());
}

inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// ---- Atomics (blocks may run on several OS threads)
template <class T>
T atomicAdd(T* p, T v) {
  return std::atomic_ref<T>(*p).fetch_add(v);
}
template <class T>
T atomicSub(T* p, T v) {
  return std::atomic_ref<T>(*p).fetch_sub(v);
}
template <class T>
T atomicExch(T* p, T v) {
  return std::atomic_ref<T>(*p).exchange(v);
}
template <class T>
T atomicCAS(T* p, T expected, T desired) {
  std::atomic_ref<T>(*p).compare_exchange_strong(expected, desired);
  return expected;
}
template <class T>
T atomicMax(T* p, T v) {
  std::atomic_ref<T> a(*p);
  T old = a.load();
  while (old < v && !a.compare_exchange_weak(old, v)) {
  }
  return old;
}
template <class T>
T atomicMin(T* p, T v) {
  std::atomic_ref<T> a(*p);
  T old = a.load();
  while (v < old && !a.compare_exchange_weak(old, v)) {
  }
  return old;
}

// ---- Math and bit intrinsics (the fast-math variants are computed exactly here)
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanhf(float x) { return tanhf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned i; std::memcpy(&i, &f, 4); return i; }
inline float __uint_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
template <class T>
T __ldg(const T* p) {
  return *p;
}
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline long min(long a, long b) { return a < b ? a : b; }
inline long max(long a, long b) { return a > b ? a : b; }
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }

#include "wmma.h"
#include "ptx_emu.h"
