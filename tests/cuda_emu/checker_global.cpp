// The checker's global-memory part (GPEN_CUDA_EMU_CHECK=race): races on device allocations
// (cudaMalloc / cudaMallocHost memory) within one launch, between blocks or between threads of
// a block, found from a write shadow kept for the bytes the launch writes (cleared at every
// launch: launches on the emulator's synchronous streams are ordered). A read or write of a byte
// another block wrote in the same launch is a race unless both are atomic; within a block the
// shared-memory rules apply (barrier epoch, warp operations). Reads are not remembered, so a
// read in an earlier block followed by a write in a later one (WAR) is seen only when a schedule
// seed runs the blocks in another order (scheduler.cpp shuffles the block order under a seed).
#include <cstdio>
#include <memory>
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
  uintptr_t miss_page = ~uintptr_t{0};  // the last page that holds no allocation
};

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

void global_launch_begin() {
  GlobalShadow& g = shadow();
  g.pages.clear();
  g.lo = g.hi = 0;
  g.miss_page = ~uintptr_t{0};
}

std::string global_access(const void* p, size_t n, bool write, bool atomic, int32_t pc, const GlobalWho& who) {
  GlobalShadow& g = shadow();
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  if (at < g.lo || at >= g.hi) {
    if ((at >> kPageBits) == g.miss_page) return "";
    uintptr_t lo = 0, hi = 0;
    if (!internal::allocation_range(p, lo, hi)) {
      g.miss_page = at >> kPageBits;
      return "";
    }
    g.lo = lo, g.hi = hi;
  }
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
