// The shared-memory arena and the checker's shadow model (checker.h, docs/cuda.md "Checker").
//
// Model (Oclgrind's, per barrier epoch): every arena byte has a shadow with the last write and
// the first read since the last barrier, each as (epoch, thread, warp-sync count, code address).
// Two accesses of one byte by different threads conflict when at least one writes, they are not
// both atomic, they fall in the same barrier epoch of the block, and, for two lanes of one warp,
// the later lane completed no warp-synchronising operation since the earlier access (no implicit
// lockstep). The order in which the fibers happened to run does not matter: a conflict is
// reported whichever thread came first.
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <atomic>
#include <mutex>
#include <vector>

#include "checker.h"

// Set while an emulated thread runs with memory checks on: the hooks' fast test.
__thread void* cuda_emu_check_active = nullptr;

namespace cuda_emu::check {

namespace {

// The arena: up to sm_90's 227 KiB per block plus red zones.
constexpr size_t kArenaBytes = 256 * 1024;
constexpr size_t kRedZone = 64;
constexpr unsigned char kPoison = 0xff;

// One access in the shadow: tid1 is the thread's linear index + 1 (0: none), bit 15 atomic.
struct Rec {
  uint32_t epoch = 0;
  uint16_t tid1 = 0;
  uint16_t wc = 0;
  int32_t pc = 0;
};
constexpr uint16_t kAtomic = 0x8000;
enum : uint8_t { kWritten = 1, kRed = 4, kAsync = 8 };  // kAsync: a cp.async to it is in flight

struct Shadow {
  Rec w, r, r2;  // the last write; the first two readers (different threads) since it
  uint8_t state = kRed;
};

struct Slot {
  const void* key;
  size_t offset, bytes;
  const char* name;
};

// A cp.async in flight: its bytes, where they go, the group (-1: not committed yet).
struct Pending {
  size_t off = 0, n = 0;
  unsigned char data[16] = {};
  int group = -1;
  int32_t pc = 0;
  uint16_t wc = 0;
};

struct Arena {
  std::unique_ptr<unsigned char[]> storage;
  unsigned char* base = nullptr;  // 128-byte aligned like the GPU's shared memory window
  std::vector<Shadow> shadow;
  std::vector<Slot> slots;
  size_t used = 0, dirty = 0;
  uint32_t epoch = 0;
  std::vector<uint16_t> lane_gen;   // per thread: the warp-sync count of its last warp operation
  std::vector<uint16_t> warp_count;  // per warp: warp operations completed
  unsigned nthreads = 0;
  dim3 bdim, gdim;
  unsigned block = 0;  // linear block index
  uintptr_t stack_lo = 0, stack_hi = 0;  // the running thread's fiber stack: never device memory
  std::string report;
  int cur = -1;
  std::vector<std::vector<Pending>> pending;  // per thread
  std::vector<int> groups;                    // per thread: groups committed so far
};

thread_local Arena* t_arena = nullptr;
std::atomic<uint32_t> g_epoch{0};

Arena& arena() {
  if (!t_arena) {
    thread_local Arena a;
    a.storage.reset(new unsigned char[kArenaBytes + kRedZone + 128]);
    a.base = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(a.storage.get()) + 127) & ~uintptr_t{127});
    std::memset(a.base, kPoison, kArenaBytes + kRedZone);
    t_arena = &a;
  }
  return *t_arena;
}

Flags parse_flags(const char* s) {
  Flags f;
  if (!s) return f;
  std::string v(s);
  size_t pos = 0;
  while (pos <= v.size()) {
    const size_t end = std::min(v.find(',', pos), v.size());
    const std::string w = v.substr(pos, end - pos);
    if (w == "race") f.race = true;
    else if (w == "sync") f.sync = true;
    else if (w == "init") f.init = true;
    else if (w == "all") f.race = f.sync = f.init = true;
    else if (!w.empty() && w != "none") {
      std::fprintf(stderr, "cuda_emu: GPEN_CUDA_EMU_CHECK: unknown check '%s' (race, sync, init, all, none)\n",
                   w.c_str());
      std::exit(2);
    }
    pos = end + 1;
  }
  return f;
}

uintptr_t pc_base() { return reinterpret_cast<uintptr_t>(&parse_flags); }

Flags g_flags = parse_flags(std::getenv("GPEN_CUDA_EMU_CHECK"));

// "file:line (function)" of a code address, through addr2line (reports only).
std::string where(int32_t pc) {
  if (pc == 0) return "?";
  const uintptr_t a = pc_base() + static_cast<intptr_t>(pc) - 1;  // inside the call instruction
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(a), &info) || !info.dli_fname) return "?";
  char cmd[1024];
  std::snprintf(cmd, sizeof cmd, "addr2line -C -f -i -e '%s' 0x%zx 2>/dev/null", info.dli_fname,
                static_cast<size_t>(a - reinterpret_cast<uintptr_t>(info.dli_fbase)));
  std::string out;
  if (FILE* p = popen(cmd, "r")) {
    char line[1024];
    std::vector<std::string> lines;
    while (std::fgets(line, sizeof line, p)) {
      std::string l(line);
      while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
      lines.push_back(l);
    }
    pclose(p);
    // Pairs of (function, file:line), innermost first: keep the innermost line outside the
    // emulator's own headers, and the whole chain after it.
    for (size_t i = 0; i + 1 < lines.size(); i += 2) {
      std::string loc = lines[i + 1];
      const size_t slash = loc.find("/kernels/");
      const size_t tslash = loc.find("/tests/");
      if (slash != std::string::npos) loc = loc.substr(slash + 1);
      else if (tslash != std::string::npos) loc = loc.substr(tslash + 1);
      if (!out.empty()) out += " <- ";
      out += loc;
      if (i == 0) {
        std::string fn = lines[i];
        if (fn.size() > 60) fn = fn.substr(0, 57) + "...";
        out += " (" + fn + ")";
      }
    }
  }
  return out.empty() ? "?" : out;
}

std::string thread_str(const Arena& a, unsigned tid1) {
  const unsigned i = (tid1 & ~kAtomic) - 1;
  const unsigned x = i % a.bdim.x, y = (i / a.bdim.x) % a.bdim.y, z = i / (a.bdim.x * a.bdim.y);
  return "thread (" + std::to_string(x) + "," + std::to_string(y) + "," + std::to_string(z) + ")";
}

std::string byte_str(const Arena& a, size_t off) {
  for (const Slot& s : a.slots)
    if (off >= s.offset && off < s.offset + s.bytes)
      return std::string(s.name) + " + " + std::to_string(off - s.offset);
  return "shared offset " + std::to_string(off);
}

void report(Arena& a, const std::string& what) {
  if (a.report.empty()) a.report = what;
}

bool same_warp_ordered(const Arena& a, const Rec& prev, unsigned me) {
  const unsigned other = (prev.tid1 & ~kAtomic) - 1;
  if (other / 32 != me / 32) return false;
  return static_cast<int16_t>(static_cast<uint16_t>(a.lane_gen[me] - prev.wc)) > 0;
}

// Whether `prev` (by another thread) and an access by `me` now are unordered.
bool conflicts(const Arena& a, const Rec& prev, unsigned me, bool atomic) {
  if (prev.tid1 == 0 || (prev.tid1 & ~kAtomic) == me + 1 || prev.epoch != a.epoch) return false;
  if (atomic && (prev.tid1 & kAtomic)) return false;
  return !same_warp_ordered(a, prev, me);
}

void race(Arena& a, const char* kind, size_t off, const Rec& prev, const char* prev_op, unsigned me, const char* op,
          int32_t pc) {
  report(a, std::string(kind) + " race on shared memory " + byte_str(a, off) + ": " + thread_str(a, me + 1) + " " +
                op + " at " + where(pc) + "; " + thread_str(a, prev.tid1) + " " + prev_op + " at " + where(prev.pc) +
                " with no __syncthreads (or, within a warp, __syncwarp) between");
}

}  // namespace

const Flags& flags() { return g_flags; }

uint64_t schedule_seed() {
  static const uint64_t seed = [] {
    const char* s = std::getenv("GPEN_CUDA_EMU_SEED");
    if (!s || !*s) return uint64_t{0};
    uint64_t v = std::strtoull(s, nullptr, 10);
    if (std::strcmp(s, "random") == 0) v = static_cast<uint64_t>(std::time(nullptr)) * 2654435761u;
    if (v == 0) v = 1;
    std::fprintf(stderr, "cuda_emu: schedule seed %llu (replay with GPEN_CUDA_EMU_SEED=%llu)\n",
                 static_cast<unsigned long long>(v), static_cast<unsigned long long>(v));
    return v;
  }();
  return seed;
}

std::string seed_note() {
  const uint64_t s = schedule_seed();
  if (s == 0) return "";
  return " (schedule seed " + std::to_string(s) + ", replay with GPEN_CUDA_EMU_SEED=" + std::to_string(s) + ")";
}

void block_begin(const LaunchConfig& cfg, uint3 bid, unsigned nthreads) {
  Arena& a = arena();
  std::memset(a.base, kPoison, std::max(a.dirty, cfg.smem));
  if (flags().memory() && a.shadow.empty()) a.shadow.resize(kArenaBytes + kRedZone);
  if (!a.shadow.empty()) std::fill(a.shadow.begin(), a.shadow.begin() + a.dirty, Shadow{});
  a.slots.clear();
  a.used = 0;
  if (cfg.smem > 0) {
    a.slots.push_back({nullptr, 0, cfg.smem, "dynamic shared memory"});
    a.used = (cfg.smem + kRedZone + 127) & ~size_t{127};
    if (!a.shadow.empty())
      for (size_t i = 0; i < cfg.smem; ++i) a.shadow[i].state = 0;
  }
  a.dirty = std::max(a.dirty, a.used);
  a.epoch = ++g_epoch;
  a.nthreads = nthreads;
  a.bdim = cfg.block;
  a.gdim = cfg.grid;
  a.block = bid.x + cfg.grid.x * (bid.y + cfg.grid.y * bid.z);
  a.lane_gen.assign(nthreads, 0);
  a.warp_count.assign((nthreads + 31) / 32, 0);
  a.report.clear();
  a.cur = -1;
  a.pending.assign(nthreads, {});
  a.groups.assign(nthreads, 0);
}

void block_end() {
  if (t_arena) t_arena->cur = -1;
  cuda_emu_check_active = nullptr;
}

void set_thread(int linear, const void* stack, size_t stack_bytes) {
  Arena& a = arena();
  a.cur = linear;
  a.stack_lo = reinterpret_cast<uintptr_t>(stack);
  a.stack_hi = a.stack_lo + stack_bytes;
  cuda_emu_check_active = linear >= 0 && flags().memory() ? &a : nullptr;
}

void barrier() {
  if (t_arena) t_arena->epoch = ++g_epoch;
}

void warp_sync(unsigned warp, unsigned members) {
  Arena& a = arena();
  if (warp >= a.warp_count.size()) return;
  const uint16_t g = ++a.warp_count[warp];
  for (unsigned lane = 0; lane < 32; ++lane)
    if ((members >> lane) & 1 && warp * 32 + lane < a.nthreads) a.lane_gen[warp * 32 + lane] = g;
}

void* dynamic_smem_base() { return arena().base; }

void* static_smem(const void* key, size_t bytes, const char* name) {
  Arena& a = arena();
  for (const Slot& s : a.slots)
    if (s.key == key) return a.base + s.offset;
  const size_t off = a.used;
  if (off + bytes > kArenaBytes) fault(std::string("shared memory: ") + name + " (" + std::to_string(bytes) +
                                        " bytes) does not fit in the 227 KiB of a block");
  a.slots.push_back({key, off, bytes, name});
  a.used = (off + bytes + kRedZone + 127) & ~size_t{127};
  a.dirty = std::max(a.dirty, a.used);
  if (!a.shadow.empty())
    for (size_t i = off; i < off + bytes; ++i) a.shadow[i].state = 0;
  return a.base + off;
}

const std::string& report() { return arena().report; }

bool shared_range(const void* p, size_t n) {
  Arena& a = arena();
  const uintptr_t base = reinterpret_cast<uintptr_t>(a.base), at = reinterpret_cast<uintptr_t>(p);
  return at >= base && at + n <= base + a.used;
}

void async_copy(void* dst, const void* data, size_t n, const void* ret) {
  Arena& a = arena();
  const uintptr_t base = reinterpret_cast<uintptr_t>(a.base), at = reinterpret_cast<uintptr_t>(dst);
  if (a.cur < 0) fault("cp.async outside a kernel thread");
  const int32_t pc = static_cast<int32_t>(reinterpret_cast<uintptr_t>(ret) - pc_base());
  if (at < base || at + n > base + a.used)
    fault("cp.async: destination " + std::to_string(at) + " is not shared memory of the block (at " + where(pc) + ")");
  const size_t off = at - base;
  bool in_slot = false;
  for (const Slot& sl : a.slots) in_slot |= off >= sl.offset && off + n <= sl.offset + sl.bytes;
  if (!in_slot)
    fault("cp.async: destination shared offset " + std::to_string(off) + " (+" + std::to_string(n) +
          " bytes) is not inside one shared array (at " + where(pc) + ")");
  const unsigned me = static_cast<unsigned>(a.cur);
  if (!a.shadow.empty() && a.report.empty()) {
    const Flags& f = flags();
    const Rec mine{a.epoch, static_cast<uint16_t>(me + 1), a.warp_count[me / 32], pc};
    for (size_t i = 0; i < n && a.report.empty(); ++i) {
      Shadow& s = a.shadow[off + i];
      if (s.state & kAsync) {
        report(a, "cp.async by " + thread_str(a, me + 1) + " at " + where(pc) + " into shared memory " +
                      byte_str(a, off + i) + " while an earlier cp.async into it (" + thread_str(a, s.w.tid1) +
                      " at " + where(s.w.pc) + ") is still in flight");
      } else if (f.race && conflicts(a, s.w, me, false)) {
        race(a, "write-after-write", off + i, s.w, "wrote it", me, "writes it by cp.async", pc);
      } else if (f.race && (conflicts(a, s.r, me, false) || conflicts(a, s.r2, me, false))) {
        race(a, "write-after-read", off + i, conflicts(a, s.r, me, false) ? s.r : s.r2, "read it", me,
             "writes it by cp.async", pc);
      }
      s.w = mine;
      s.state |= kAsync;
    }
  }
  // Poison until the wait: a premature read sees NaNs (also with the checks off), not the data.
  std::memset(a.base + off, kPoison, n);
  Pending p;
  p.off = off;
  p.n = n;
  std::memcpy(p.data, data, n);
  p.pc = pc;
  p.wc = a.warp_count[me / 32];
  a.pending[me].push_back(p);
}

void async_commit() {
  Arena& a = arena();
  if (a.cur < 0) return;
  const int g = a.groups[a.cur]++;
  for (Pending& p : a.pending[a.cur])
    if (p.group < 0) p.group = g;
}

void async_wait(int n) {
  Arena& a = arena();
  if (a.cur < 0) return;
  const unsigned me = static_cast<unsigned>(a.cur);
  const int limit = a.groups[me] - n;  // groups below this one complete
  std::vector<Pending>& q = a.pending[me];
  size_t keep = 0;
  for (size_t i = 0; i < q.size(); ++i) {
    Pending& p = q[i];
    if (p.group < 0 || p.group >= limit) {
      q[keep++] = p;
      continue;
    }
    std::memcpy(a.base + p.off, p.data, p.n);
    if (!a.shadow.empty())
      for (size_t j = 0; j < p.n; ++j) {
        Shadow& s = a.shadow[p.off + j];
        s.state = static_cast<uint8_t>((s.state & ~kAsync) | kWritten);
        // The issuing thread's write, in the epoch of the wait: others read it after a barrier.
        s.w = Rec{a.epoch, static_cast<uint16_t>(me + 1), a.warp_count[me / 32], p.pc};
        s.r = s.r2 = Rec{};
      }
  }
  q.resize(keep);
}

std::string code_location(int32_t pc) { return where(pc); }

// Called by the hooks for every load and store of instrumented code while a thread runs.
void access(const void* p, size_t n, bool write, bool atomic, const void* ret) {
  Arena& a = *static_cast<Arena*>(cuda_emu_check_active);
  const uintptr_t base = reinterpret_cast<uintptr_t>(a.base);
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  if (a.cur < 0 || !a.report.empty() || (at >= a.stack_lo && at < a.stack_hi)) return;
  const unsigned me = static_cast<unsigned>(a.cur);
  const int32_t pc = static_cast<int32_t>(reinterpret_cast<uintptr_t>(ret) - pc_base());
  const Flags& f = flags();
  if (at + n <= base || at >= base + kArenaBytes + kRedZone) {
    if (!f.race && !f.init) return;
    const GlobalWho who{me, a.block, a.epoch, a.warp_count[me / 32], a.lane_gen[me], a.bdim, a.gdim};
    std::string r = global_access(p, n, write, atomic, pc, who);
    if (!r.empty()) report(a, r);
    return;
  }
  const Rec mine{a.epoch, static_cast<uint16_t>((me + 1) | (atomic ? kAtomic : 0)), a.warp_count[me / 32], pc};
  const char* op = atomic ? "atomically accesses" : write ? "writes" : "reads";
  for (size_t i = 0; i < n; ++i) {
    const size_t off = at + i - base;
    if (at + i < base) continue;
    Shadow& s = a.shadow[off];
    if (s.state & kRed) {
      report(a, std::string("out-of-bounds shared memory ") + (write ? "write" : "read") + " at " +
                    (off < a.used ? "the red zone after " : "") + "offset " + std::to_string(off) + " by " +
                    thread_str(a, me + 1) + " at " + where(pc) + " (no shared array there)");
      return;
    }
    if (s.state & kAsync) {
      report(a, std::string(write ? "write" : "read") + " of shared memory " + byte_str(a, off) + " by " +
                    thread_str(a, me + 1) + " at " + where(pc) + " while a cp.async into it is in flight (" +
                    thread_str(a, s.w.tid1) + " issued it at " + where(s.w.pc) +
                    "; its group not yet completed by that thread's cp.async.wait_group)");
      return;
    }
    if (f.race && conflicts(a, s.w, me, atomic)) {
      race(a, write ? "write-after-write" : "read-after-write", off, s.w, "wrote it", me, op, pc);
      return;
    }
    if (write || atomic) {
      if (f.race && (conflicts(a, s.r, me, atomic) || conflicts(a, s.r2, me, atomic))) {
        race(a, "write-after-read", off, conflicts(a, s.r, me, atomic) ? s.r : s.r2, "read it", me, op, pc);
        return;
      }
      if (f.init && atomic && !(s.state & kWritten)) {
        report(a, "uninitialised shared memory " + byte_str(a, off) + " updated atomically by " + thread_str(a, me + 1) +
                      " at " + where(pc) + " before any thread of the block wrote it");
        return;
      }
      s.w = mine;
      s.state |= kWritten;
    }
    if (!write) {
      if (f.init && !(s.state & kWritten)) {
        report(a, "uninitialised shared memory " + byte_str(a, off) + " read by " + thread_str(a, me + 1) + " at " +
                      where(pc) + " before any thread of the block wrote it");
        return;
      }
      if (s.r.tid1 == 0 || s.r.epoch != a.epoch) {
        s.r = mine;
        s.r2 = Rec{};
      } else if ((s.r.tid1 & ~kAtomic) != me + 1 && (s.r2.tid1 == 0 || s.r2.epoch != a.epoch)) {
        s.r2 = mine;
      }
    }
  }
}

}  // namespace cuda_emu::check

namespace cuda_emu {
void set_checks(const char* spec) { check::g_flags = check::parse_flags(spec); }
bool is_shared_address(const void* p, size_t n) { return check::shared_range(p, n); }
void async_copy_issue(void* dst, const void* data, size_t n, const void* ret) { check::async_copy(dst, data, n, ret); }
void async_commit_group() { check::async_commit(); }
void async_wait_group(int n) { check::async_wait(n); }
}  // namespace cuda_emu
