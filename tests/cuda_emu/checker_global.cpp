// The checker's global-memory part (GPEN_CUDA_EMU_CHECK=race): races on device allocations
// (cudaMalloc / cudaMallocHost memory) within one launch, between blocks or between threads of
// a block, found from a write shadow kept for the bytes the launch writes (cleared at every
// launch: launches on the emulator's synchronous streams are ordered). A read or write of a byte
// another block wrote in the same launch is a race unless both are atomic; within a block the
// shared-memory rules apply (barrier epoch, warp operations). Reads are not remembered, so a
// read in an earlier block followed by a write in a later one (WAR) is seen only when a schedule
// seed runs the blocks in another order (scheduler.cpp shuffles the block order under a seed).
//
// GPEN_CUDA_EMU_CHECK=init also keeps, per device allocation and for its whole life, which bytes
// have been written (by a kernel, cudaMemcpy* or cudaMemset*), and reports a kernel's read of a
// byte never written since cudaMalloc: compute-sanitizer's initcheck for device memory.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <vector>
#include <string>
#include <unordered_map>

#include "checker.h"
#include "internal.h"

namespace cuda_emu::check {

namespace {

struct GRec {
  uint32_t epoch = 0;
  uint32_t block1 = 0;  // linear block index + 1; 0: not written in this launch
  uint16_t tid1 = 0;    // linear thread index + 1, bit 15 atomic
  uint16_t wc = 0;
  int32_t pc = 0;
};
constexpr uint16_t kAtomicBit = 0x8000;
constexpr int kPageBits = 12;

struct GlobalShadow {
  std::unordered_map<uintptr_t, std::unique_ptr<GRec[]>> pages;
  uintptr_t lo = 0, hi = 0;  // the allocation of the last device access
  std::vector<uint8_t>* written = nullptr;  // its written bytes (init check; null: host memory)
  uintptr_t miss_page = ~uintptr_t{0};  // the last page that holds no allocation
};

// Written bytes of each device allocation (base -> one flag per byte). Host code changes it
// under the mutex; kernels read it from the one worker that runs blocks while memory checks are
// on, while the launching thread waits.
struct InitShadow {
  std::mutex mu;
  std::map<uintptr_t, std::vector<uint8_t>> written;
};
InitShadow& init_shadow() {
  static InitShadow s;
  return s;
}

std::vector<uint8_t>* written_of(uintptr_t lo) {
  InitShadow& s = init_shadow();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.written.find(lo);
  return it == s.written.end() ? nullptr : &it->second;
}

GlobalShadow& shadow() {
  static GlobalShadow g;  // one worker runs the blocks while race checks are on
  return g;
}

std::string block_str(uint32_t linear, const dim3& g) {
  return "block (" + std::to_string(linear % g.x) + "," + std::to_string((linear / g.x) % g.y) + "," +
         std::to_string(linear / (g.x * g.y)) + ")";
}

std::string thread_of(uint16_t tid1, const dim3& b) {
  const unsigned i = (tid1 & ~kAtomicBit) - 1u;
  return "thread (" + std::to_string(i % b.x) + "," + std::to_string((i / b.x) % b.y) + "," +
         std::to_string(i / (b.x * b.y)) + ")";
}

}  // namespace

void global_allocated(const void* base, size_t bytes) {
  if (!flags().init) return;
  InitShadow& s = init_shadow();
  std::lock_guard<std::mutex> lock(s.mu);
  s.written[reinterpret_cast<uintptr_t>(base)].assign(bytes, 0);
}

void global_released(const void* base) {
  {
    InitShadow& s = init_shadow();
    std::lock_guard<std::mutex> lock(s.mu);
    s.written.erase(reinterpret_cast<uintptr_t>(base));
  }
  GlobalShadow& g = shadow();
  g.lo = g.hi = 0;  // the cached allocation may be this one
  g.written = nullptr;
}

void global_written(const void* p, size_t n) {
  if (!flags().init || n == 0) return;
  uintptr_t lo = 0, hi = 0;
  bool pinned = false;
  if (!internal::allocation_range(p, lo, hi, &pinned) || pinned) return;
  InitShadow& s = init_shadow();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.written.find(lo);
  if (it == s.written.end()) return;
  const size_t off = reinterpret_cast<uintptr_t>(p) - lo, end = std::min<size_t>(off + n, it->second.size());
  std::fill(it->second.begin() + static_cast<std::ptrdiff_t>(off), it->second.begin() + static_cast<std::ptrdiff_t>(end), 1);
}

void global_launch_begin() {
  GlobalShadow& g = shadow();
  g.pages.clear();
  g.lo = g.hi = 0;
  g.written = nullptr;
  g.miss_page = ~uintptr_t{0};
}

std::string global_access(const void* p, size_t n, bool write, bool atomic, int32_t pc, const GlobalWho& who) {
  GlobalShadow& g = shadow();
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  if (at < g.lo || at >= g.hi) {
    if ((at >> kPageBits) == g.miss_page) return "";
    uintptr_t lo = 0, hi = 0;
    bool pinned = false;
    if (!internal::allocation_range(p, lo, hi, &pinned)) {
      g.miss_page = at >> kPageBits;
      return "";
    }
    g.lo = lo, g.hi = hi;
    g.written = pinned ? nullptr : written_of(lo);
  }
  if (flags().init && g.written) {
    std::vector<uint8_t>& w = *g.written;
    const size_t off = at - g.lo, end = std::min<size_t>(off + n, w.size());
    if (write && !atomic) {
      std::fill(w.begin() + static_cast<std::ptrdiff_t>(off), w.begin() + static_cast<std::ptrdiff_t>(end), 1);
    } else {
      for (size_t i = off; i < end; ++i)
        if (!w[i]) {
          char addr[64];
          std::snprintf(addr, sizeof addr, "allocation 0x%zx + %zu", static_cast<size_t>(g.lo), i);
          return std::string("read of uninitialised global memory (") + addr + ", never written since cudaMalloc): " +
                 block_str(who.block, who.gdim) + " " + thread_of(static_cast<uint16_t>(who.tid + 1), who.bdim) +
                 (atomic ? " atomically accesses it" : " reads it") + " at " + code_location(pc);
        }
      if (atomic) std::fill(w.begin() + static_cast<std::ptrdiff_t>(off), w.begin() + static_cast<std::ptrdiff_t>(end), 1);
    }
  }
  if (!flags().race) return "";
  const uint16_t me1 = static_cast<uint16_t>((who.tid + 1) | (atomic ? kAtomicBit : 0));
  for (size_t i = 0; i < n && at + i < g.hi; ++i) {
    const uintptr_t b = at + i;
    std::unique_ptr<GRec[]>& page = g.pages[b >> kPageBits];
    if (!page) {
      if (!write && !atomic) continue;  // nothing written on this page in this launch
      page.reset(new GRec[size_t{1} << kPageBits]);
    }
    GRec& r = page[b & ((size_t{1} << kPageBits) - 1)];
    if (r.block1 != 0 && !(atomic && (r.tid1 & kAtomicBit))) {
      bool race = false;
      const char* between = "";
      if (r.block1 != who.block + 1) {
        race = true;
        between = "different blocks of one launch (no grid-wide ordering)";
      } else if ((r.tid1 & ~kAtomicBit) != who.tid + 1 && r.epoch == who.epoch) {
        const unsigned other = (r.tid1 & ~kAtomicBit) - 1u;
        race = other / 32 != who.tid / 32 || static_cast<int16_t>(static_cast<uint16_t>(who.lane_gen - r.wc)) <= 0;
        between = "no __syncthreads (or, within a warp, __syncwarp) between";
      }
      if (race) {
        char addr[64];
        std::snprintf(addr, sizeof addr, "allocation 0x%zx + %zu", static_cast<size_t>(g.lo),
                      static_cast<size_t>(b - g.lo));
        return std::string(write || atomic ? "write-after-write" : "read-after-write") + " race on global memory (" +
               addr + "): " + block_str(who.block, who.gdim) + " " + thread_of(me1, who.bdim) + " " +
               (atomic ? "atomically accesses" : write ? "writes" : "reads") + " at " + code_location(pc) + "; " +
               block_str(r.block1 - 1, who.gdim) + " " + thread_of(r.tid1, who.bdim) + " wrote it at " +
               code_location(r.pc) + ", " + between;
      }
    }
    if (write || atomic) r = GRec{who.epoch, who.block + 1, me1, who.wc, pc};
  }
  return "";
}

}  // namespace cuda_emu::check
