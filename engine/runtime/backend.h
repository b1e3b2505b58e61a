#pragma once
// What a device must provide to run a planned graph. The executor owns the order and the views;
// a backend owns memory on its device and the kernels.
#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "engine/graph/graph.h"
#include "engine/plan/memory_plan.h"
#include "kernels/cpu/cpu_options.h"

namespace gpen {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  // Scratch bytes this backend's kernel for `n` needs (see MemoryPlan::workspace_bytes).
  virtual size_t workspace_bytes(const Graph& g, const Node& n) const = 0;
  // The kernel that runs `n`, chosen once when the graph is planned (plan_memory with planned_on):
  // its workspace and, on the CPU, its conv path. By default the workspace alone.
  virtual NodeKernel plan_node(const Graph& g, const Node& n) const { return {workspace_bytes(g, n)}; }
  // The workspace the planned kernel `k` of `n` needs under the settings in effect now (the CPU's
  // thread count): the executor checks it against the plan's before every run.
  virtual size_t planned_workspace_bytes(const Graph& g, const Node& n, const NodeKernel& k) const {
    (void)k;
    return workspace_bytes(g, n);
  }
  // Device memory for the arena, the workspace and weights. Counted, so tests can prove that
  // steady-state runs allocate nothing.
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* p) = 0;
  virtual void upload(void* dst, const void* src, size_t bytes) = 0;
  virtual void download(void* dst, const void* src, size_t bytes) = 0;
  // Runs one node; `in` has one view per node input (data == nullptr for an absent optional one).
  virtual void run(const Node& n, std::span<const TensorView> in, std::span<const TensorView> out,
                   void* workspace) = 0;
  // The same with the kernel the plan chose for it (plan_node); by default run().
  virtual void run_planned(const Node& n, const NodeKernel& k, std::span<const TensorView> in,
                           std::span<const TensorView> out, void* workspace) {
    (void)k;
    run(n, in, out, workspace);
  }
  virtual void synchronize() {}
  // Called by the executor before each run of a graph (the CPU backend measures how far apart its
  // threads run: kernels/cpu/core_distance.h).
  virtual void begin_run() {}
  // Whether allocations of 2 MiB and more come on transparent huge pages. GPEN's CPU weights are
  // copied into one such allocation only then: the copy pays for its load time in fewer TLB misses
  // (docs/benchmarks.md, huge pages), which a copy onto 4 KiB pages would not.
  virtual bool huge_pages() const { return false; }
  // The CPU's low-memory mode (cpu::CpuOptions::low_memory): weights stay in their file's mapping
  // and each one's pages go after its last reader of a run (GpenModel), the kernels read weights
  // tile by tile.
  virtual bool low_memory() const { return false; }
  size_t allocations() const { return allocations_; }

 protected:
  size_t allocations_ = 0;
};

// For plan_memory: each node's kernel as `b` plans it (the plan keeps them for the executor).
KernelFn planned_on(const Backend& b);

// The CPU backend, with the options of the environment (engine/runtime/env_options.h) or these.
std::unique_ptr<Backend> make_cpu_backend();
std::unique_ptr<Backend> make_cpu_backend(const cpu::CpuOptions& options);

}  // namespace gpen
