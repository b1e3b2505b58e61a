#pragma once
// What a device must provide to run a planned graph. The executor owns the order and the views;
// a backend owns memory on its device and the kernels.
#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "engine/graph/graph.h"

namespace gpen {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  // Scratch bytes this backend's kernel for `n` needs (see MemoryPlan::workspace_bytes).
  virtual size_t workspace_bytes(const Graph& g, const Node& n) const = 0;
  // Device memory for the arena, the workspace and weights. Counted, so tests can prove that
  // steady-state runs allocate nothing.
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* p) = 0;
  virtual void upload(void* dst, const void* src, size_t bytes) = 0;
  virtual void download(void* dst, const void* src, size_t bytes) = 0;
  // Runs one node; `in` has one view per node input (data == nullptr for an absent optional one).
  virtual void run(const Node& n, std::span<const TensorView> in, std::span<const TensorView> out,
                   void* workspace) = 0;
  virtual void synchronize() {}
  // Called by the executor before each run of a graph (the CPU backend measures how far apart its
  // threads run: kernels/cpu/core_distance.h).
  virtual void begin_run() {}
  // Whether allocations of 2 MiB and more come on transparent huge pages. GPEN's CPU weights are
  // copied into one such allocation only then: the copy pays for its load time in fewer TLB misses
  // (docs/benchmarks.md, session 23), which a copy onto 4 KiB pages would not.
  virtual bool huge_pages() const { return false; }
  size_t allocations() const { return allocations_; }

 protected:
  size_t allocations_ = 0;
};

std::unique_ptr<Backend> make_cpu_backend();

}  // namespace gpen
