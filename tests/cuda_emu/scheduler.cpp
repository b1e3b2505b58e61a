// Runs emulated CUDA blocks: every thread of a block is a Boost.Context fiber, and barriers and
// warp operations are the points where a thread yields to the block's scheduler.
//
// The scheduler resumes runnable threads in order, round-robin. A thread that reaches
// __syncthreads or a warp operation records its arrival; the last thread to arrive releases the
// others (marks them runnable) and carries on without yielding. When no thread is runnable and
// some have not finished, the block is stuck: the scheduler names the cause (a divergent
// __syncthreads, lanes missing from a warp operation) and faults the launch.
//
// Warp operations exchange values through two slot rows per warp used alternately by
// consecutive rounds, so a lane that leaves a round early can start the next one while slower
// lanes still read the previous row.
//
// Under AddressSanitizer every stack switch is announced with __sanitizer_start_switch_fiber /
// __sanitizer_finish_switch_fiber (Boost's fcontext fibers do not do it themselves), so ASan
// always knows which stack runs and the emulated kernels are checked like host code.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/context/fiber.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "checker.h"
#include "cuda_emu.h"
#include "internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define CUDA_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUDA_EMU_ASAN 1
#endif
#endif
#ifdef CUDA_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace cuda_emu {

namespace {

thread_local Coords t_coords;

namespace bctx = boost::context;

#ifdef CUDA_EMU_ASAN
void start_switch(void** fake_stack_save, const void* bottom, size_t size) {
  __sanitizer_start_switch_fiber(fake_stack_save, bottom, size);
}
void finish_switch(void* fake_stack, const void** old_bottom, size_t* old_size) {
  __sanitizer_finish_switch_fiber(fake_stack, old_bottom, old_size);
}
void unpoison(void* p, size_t n) { __asan_unpoison_memory_region(p, n); }
#else
void start_switch(void**, const void*, size_t) {}
void finish_switch(void*, const void**, size_t*) {}
void unpoison(void*, size_t) {}
#endif

// Thrown inside a fiber to unwind it when its block is abandoned after a fault.
struct Cancelled {};

size_t fiber_stack_bytes() {
  static const size_t bytes = [] {
    size_t kb = 256;
    if (const char* s = std::getenv("GPEN_CUDA_EMU_STACK_KB")) kb = std::max<size_t>(64, std::strtoul(s, nullptr, 10));
    return kb * 1024;
  }();
  return bytes;
}

// Fiber stacks: mmap'd (only touched pages cost memory) with a guard page below, so a stack
// overflow is a clean SIGSEGV; recycled across blocks and launches of one OS thread.
class StackPool {
 public:
  StackPool() = default;
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;
  ~StackPool() {
    for (const auto& m : maps_) munmap(m.first, m.second);
  }

  bctx::stack_context take() {
    if (free_.empty()) {
      const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
      const size_t size = fiber_stack_bytes();
      void* base = mmap(nullptr, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                        -1, 0);
      if (base == MAP_FAILED) {
        std::fprintf(stderr, "cuda_emu: cannot map a %zu-byte fiber stack\n", size);
        std::abort();
      }
      mprotect(base, page, PROT_NONE);
      maps_.emplace_back(base, size + page);
      free_.reserve(maps_.size());  // give() must not allocate: it runs in noexcept code
      bctx::stack_context sc;
      sc.size = size;
      sc.sp = static_cast<char*>(base) + page + size;
      return sc;
    }
    const bctx::stack_context sc = free_.back();
    free_.pop_back();
    return sc;
  }

  void give(const bctx::stack_context& sc) noexcept { free_.push_back(sc); }

 private:
  std::vector<bctx::stack_context> free_;
  std::vector<std::pair<void*, size_t>> maps_;
};

// Boost calls deallocate when a fiber's function has returned: the stack goes back to the pool.
struct PoolAllocator {
  StackPool* pool;
  bctx::stack_context allocate() { return pool->take(); }
  void deallocate(bctx::stack_context& sc) noexcept { pool->give(sc); }
};

enum class State : uint8_t { runnable, at_syncthreads, at_warp_op, done };

struct EmuThread {
  bctx::fiber fiber;  // the suspended thread (empty while it runs or after it finished)
  bctx::fiber back;   // the scheduler, while this thread runs
  State state = State::runnable;
  bool cancel = false;
  uint3 tid{0, 0, 0};
  unsigned lane = 0, warp = 0;
  const char* waiting_in = "";
  void* stack_bottom = nullptr;
  size_t stack_size = 0;
  void* fake_stack = nullptr;
};

struct WarpState {
  unsigned existing = 0;    // lanes present (the last warp of a block may be partial)
  unsigned exited = 0;      // lanes whose thread has returned
  unsigned arrived = 0;     // lanes waiting in the current round
  unsigned round_mask = 0;  // the mask of the current round (restricted to existing lanes)
  const char* round_op = "";
  uint64_t round = 0;
  unsigned members[2] = {0, 0};  // lanes that took part in the round that used slot row r & 1
  uint64_t slots[2][32] = {};
  // warp_gather's payloads (ldmatrix addresses, mma fragments), alternating like the slots.
  unsigned char blobs[2][32][kGatherBytes] = {};
};

struct Block {
  std::vector<EmuThread> threads;
  std::vector<WarpState> warps;
  unsigned nthreads = 0;
  unsigned done = 0;
  unsigned arrived = 0;  // threads waiting at __syncthreads
  uint64_t round = 0;
  int counts[2] = {0, 0};  // __syncthreads_count accumulators, alternating like the warp slots
  KernelBody body = nullptr;
  const void* ctx = nullptr;
  std::string fault;
  // The OS thread's own stack, which runs the scheduler (learnt from ASan on the first switch).
  const void* main_bottom = nullptr;
  size_t main_size = 0;
  void* main_fake_stack = nullptr;
};

// Everything one OS thread needs to run blocks.
struct Worker {
  StackPool pool;
  Block block;
  std::vector<unsigned> order;  // the resume order of a sweep (shuffled under a schedule seed)
  uint64_t rng = 0;
};

thread_local Worker* t_worker = nullptr;
thread_local Block* t_block = nullptr;
thread_local EmuThread* t_self = nullptr;

Worker& this_worker() {
  thread_local Worker worker;
  t_worker = &worker;
  return worker;
}

std::string hex(unsigned v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

std::string thread_name(const EmuThread& t) {
  return "thread (" + std::to_string(t.tid.x) + "," + std::to_string(t.tid.y) + "," + std::to_string(t.tid.z) +
         ")";
}

Block& current_block(const char* op) {
  if (!t_block || !t_self) {
    std::fprintf(stderr, "cuda_emu: %s called outside an emulated kernel\n", op);
    std::abort();
  }
  return *t_block;
}

// Switches from the running thread back to the scheduler until it resumes this thread.
void suspend(Block& b, EmuThread& t) {
  start_switch(&t.fake_stack, b.main_bottom, b.main_size);
  t.back = std::move(t.back).resume();
  finish_switch(t.fake_stack, &b.main_bottom, &b.main_size);
  if (t.cancel) throw Cancelled{};
}

void resume(Block& b, EmuThread& t) {
  t_self = &t;
  t_coords.tid = t.tid;
  t_coords.lane = t.lane;
  t_coords.warp = t.warp;
  check::set_thread(static_cast<int>(&t - b.threads.data()), t.stack_bottom, t.stack_size);
  start_switch(&b.main_fake_stack, t.stack_bottom, t.stack_size);
  t.fiber = std::move(t.fiber).resume();
  finish_switch(b.main_fake_stack, nullptr, nullptr);
  check::set_thread(-1);
  t_self = nullptr;
  if (!check::report().empty() && b.fault.empty()) b.fault = check::report();
}

void complete_warp_round(Block& b, WarpState& w) {
  w.members[w.round & 1] = w.arrived;
  const unsigned released = w.arrived;
  w.arrived = 0;
  ++w.round;
  const unsigned first = static_cast<unsigned>(&w - b.warps.data()) * 32;
  check::warp_sync(first / 32, released);
  for (unsigned lane = 0; lane < 32; ++lane)
    if ((released >> lane) & 1) {
      EmuThread& t = b.threads[first + lane];
      if (t.state == State::at_warp_op) t.state = State::runnable;
    }
}

void record_block_fault(Block& b, const std::string& message) {
  if (b.fault.empty()) b.fault = message;
}

bctx::fiber thread_main(Block& b, EmuThread& t, bctx::fiber&& scheduler) {
  finish_switch(nullptr, &b.main_bottom, &b.main_size);
  t.back = std::move(scheduler);
  try {
    if (!t.cancel) b.body(b.ctx);
  } catch (const bctx::detail::forced_unwind&) {
    throw;
  } catch (const Cancelled&) {
  } catch (const std::exception& e) {
    record_block_fault(b, thread_name(t) + ": the kernel threw " + e.what());
  } catch (...) {
    record_block_fault(b, thread_name(t) + ": the kernel threw an exception");
  }
  t.state = State::done;
  ++b.done;
  WarpState& w = b.warps[t.warp];
  w.exited |= 1u << t.lane;
  if (check::flags().sync && w.arrived != 0 && ((w.round_mask >> t.lane) & 1))
    record_block_fault(b, thread_name(t) + ": exited while lanes " + hex(w.arrived) + " of its warp wait for it in " +
                              w.round_op + " (mask " + hex(w.round_mask) + ")");
  // Non-exited lanes are all a warp operation waits for.
  if (w.arrived != 0 && w.arrived == (w.round_mask & ~w.exited)) complete_warp_round(b, w);
  start_switch(nullptr, b.main_bottom, b.main_size);  // this stack is finished
  return std::move(t.back);
}

// Explains why no thread of the block can run.
std::string describe_stall(const Block& b) {
  unsigned at_sync = 0;
  const EmuThread* first_exited = nullptr;
  for (const EmuThread& t : b.threads) {
    if (t.state == State::at_syncthreads) ++at_sync;
    if (t.state == State::done && !first_exited) first_exited = &t;
  }
  for (size_t wi = 0; wi < b.warps.size(); ++wi) {
    const WarpState& w = b.warps[wi];
    if (w.arrived == 0) continue;
    const unsigned missing = w.round_mask & ~w.exited & ~w.arrived;
    std::string where;
    for (unsigned lane = 0; lane < 32; ++lane)
      if ((missing >> lane) & 1) {
        const EmuThread& t = b.threads[wi * 32 + lane];
        where = t.state == State::at_syncthreads ? "__syncthreads" : t.waiting_in;
        break;
      }
    return "deadlock: warp " + std::to_string(wi) + " waits in " + w.round_op + " (mask " + hex(w.round_mask) +
           ") for lanes " + hex(missing) + ", which wait in " + where;
  }
  if (at_sync > 0 && first_exited)
    return "divergent __syncthreads: " + std::to_string(at_sync) + " threads wait at __syncthreads but " +
           std::to_string(b.done) + " threads of the block have exited (first: " + thread_name(*first_exited) + ")";
  return "deadlock: no thread of the block can run";
}

// Runs one block to completion; on a fault returns false with the reason in `fault`.
bool run_block(Worker& wk, const LaunchConfig& cfg, KernelBody body, const void* ctx, uint3 bid, std::string& fault) {
  Block& b = wk.block;
  const unsigned n = cfg.block.x * cfg.block.y * cfg.block.z;
  b.threads.clear();
  b.threads.resize(n);
  b.warps.assign((n + 31) / 32, WarpState{});
  b.nthreads = n;
  b.done = 0;
  b.arrived = 0;
  b.round = 0;
  b.counts[0] = b.counts[1] = 0;
  b.body = body;
  b.ctx = ctx;
  b.fault.clear();
  t_block = &b;
  t_coords.bid = bid;
  t_coords.bdim = cfg.block;
  t_coords.gdim = cfg.grid;
  check::block_begin(cfg, bid, n);  // shared memory poisoned: not zero (nor the last block's) on a GPU

  for (unsigned i = 0; i < n; ++i) {
    EmuThread& t = b.threads[i];
    t.tid = {i % cfg.block.x, (i / cfg.block.x) % cfg.block.y, i / (cfg.block.x * cfg.block.y)};
    t.lane = i % 32;
    t.warp = i / 32;
    b.warps[t.warp].existing |= 1u << t.lane;
    const bctx::stack_context sc = wk.pool.take();
    t.stack_size = sc.size;
    t.stack_bottom = static_cast<char*>(sc.sp) - sc.size;
    unpoison(t.stack_bottom, t.stack_size);  // frames of an earlier fiber may have left poison
    Block* bp = &b;
    EmuThread* tp = &t;
    t.fiber = bctx::fiber(std::allocator_arg, bctx::preallocated(sc.sp, sc.size, sc), PoolAllocator{&wk.pool},
                          [bp, tp](bctx::fiber&& s) { return thread_main(*bp, *tp, std::move(s)); });
  }

  // A schedule seed shuffles the order in which each sweep resumes the runnable threads (and so
  // the warps), so that a result that depends on it changes between seeds.
  const uint64_t seed = check::schedule_seed();
  wk.order.resize(n);
  for (unsigned i = 0; i < n; ++i) wk.order[i] = i;
  if (seed != 0) wk.rng = seed ^ (0x9e3779b97f4a7c15ull * (1 + bid.x + 65536ull * bid.y + (bid.z * 1ull << 32)));
  while (b.done < n) {
    bool ran = false;
    if (seed != 0)
      for (unsigned i = n; i > 1; --i) {
        wk.rng ^= wk.rng << 13, wk.rng ^= wk.rng >> 7, wk.rng ^= wk.rng << 17;
        std::swap(wk.order[i - 1], wk.order[wk.rng % i]);
      }
    for (unsigned idx : wk.order) {
      EmuThread& t = b.threads[idx];
      if (t.state != State::runnable) continue;
      resume(b, t);
      ran = true;
      if (!b.fault.empty()) break;
    }
    if (b.fault.empty() && !ran) b.fault = describe_stall(b);
    if (!b.fault.empty()) {
      // Unwind every unfinished thread so its stack returns to the pool.
      for (EmuThread& t : b.threads)
        if (t.state != State::done) {
          t.cancel = true;
          t.state = State::runnable;
          resume(b, t);
        }
      break;
    }
  }
  t_block = nullptr;
  check::block_end();
  if (!b.fault.empty()) {
    fault = b.fault;
    return false;
  }
  return true;
}

std::atomic<int> g_worker_threads{0};

}  // namespace

Coords* coords_location() noexcept { return &t_coords; }

void set_worker_threads(int n) { g_worker_threads = std::max(1, n); }

int worker_threads() {
  int n = g_worker_threads.load();
  if (n == 0) {
    n = 1;
    if (const char* s = std::getenv("GPEN_CUDA_EMU_THREADS")) n = std::clamp(std::atoi(s), 1, 256);
    g_worker_threads = n;
  }
  return n;
}

void syncthreads() { (void)syncthreads_count(0); }

int syncthreads_count(int predicate) {
  Block& b = current_block("__syncthreads");
  EmuThread& t = *t_self;
  const uint64_t r = b.round;
  b.counts[r & 1] += predicate != 0;
  if (++b.arrived == b.nthreads) {
    b.arrived = 0;
    ++b.round;
    b.counts[(r + 1) & 1] = 0;
    check::barrier();
    for (EmuThread& o : b.threads)
      if (o.state == State::at_syncthreads) o.state = State::runnable;
  } else {
    t.state = State::at_syncthreads;
    t.waiting_in = "__syncthreads";
    suspend(b, t);
  }
  return b.counts[r & 1];
}

namespace {

// One round of a warp operation: publishes `value`, waits for the lanes of `mask`, and returns
// the round's slot row; `members` receives the lanes that took part.
const uint64_t* warp_round(unsigned mask, uint64_t value, const char* op, unsigned& members,
                           const void* blob = nullptr, size_t blob_bytes = 0, const unsigned char** blob_row = nullptr) {
  Block& b = current_block(op);
  EmuThread& t = *t_self;
  WarpState& w = b.warps[t.warp];
  const unsigned bit = 1u << t.lane;
  if (!(mask & bit)) fault(std::string(op) + ": the calling lane " + std::to_string(t.lane) + " is not in mask " + hex(mask));
  const unsigned need = mask & w.existing;
  // synccheck: on a GPU a mask naming a lane that exited or does not exist is undefined.
  if (check::flags().sync && (mask & ~(w.existing & ~w.exited)) != 0)
    fault(std::string(op) + ": mask " + hex(mask) + " names lanes " + hex(mask & ~(w.existing & ~w.exited)) +
          " of warp " + std::to_string(t.warp) + " that have exited or do not exist");
  if (w.arrived == 0) {
    w.round_mask = need;
    w.round_op = op;
  } else if (need != w.round_mask || std::strcmp(op, w.round_op) != 0) {
    fault(std::string(op) + " with mask " + hex(mask) + " meets " + w.round_op + " with mask " + hex(w.round_mask) +
          " in the same warp: lanes must call the same warp operation with the same mask");
  }
  const uint64_t r = w.round;
  w.slots[r & 1][t.lane] = value;
  if (blob) std::memcpy(w.blobs[r & 1][t.lane], blob, blob_bytes);
  if (blob_row) *blob_row = &w.blobs[r & 1][0][0];
  w.arrived |= bit;
  if (w.arrived == (w.round_mask & ~w.exited)) {
    complete_warp_round(b, w);
  } else {
    t.state = State::at_warp_op;
    t.waiting_in = op;
    suspend(b, t);
  }
  members = w.members[r & 1];
  return w.slots[r & 1];
}

}  // namespace

uint64_t warp_shuffle(unsigned mask, uint64_t value, unsigned src, const char* op) {
  unsigned members = 0;
  const uint64_t* row = warp_round(mask, value, op, members);
  if (src >= 32 || !((members >> src) & 1))
    fault(std::string(op) + ": lane " + std::to_string(t_coords.lane) + " reads lane " + std::to_string(src) +
          ", which did not take part (mask " + hex(mask) + ")");
  return row[src];
}

unsigned warp_gather(unsigned mask, const void* mine, size_t bytes, void* all, const char* op) {
  if (bytes > kGatherBytes) fault(std::string(op) + ": warp_gather of " + std::to_string(bytes) + " bytes per lane");
  unsigned members = 0;
  const unsigned char* row = nullptr;
  warp_round(mask, 0, op, members, mine, bytes, &row);
  unsigned char* out = static_cast<unsigned char*>(all);
  for (unsigned lane = 0; lane < 32; ++lane) {
    if ((members >> lane) & 1)
      std::memcpy(out + lane * bytes, row + lane * kGatherBytes, bytes);
    else
      std::memset(out + lane * bytes, 0, bytes);
  }
  return members;
}

unsigned warp_vote(unsigned mask, bool predicate, const char* op) {
  unsigned members = 0;
  const uint64_t* row = warp_round(mask, predicate ? 1 : 0, op, members);
  unsigned ballot = 0;
  for (unsigned lane = 0; lane < 32; ++lane)
    if (((members >> lane) & 1) && row[lane]) ballot |= 1u << lane;
  return ballot;
}

unsigned warp_live_lanes() {
  Block& b = current_block("__activemask");
  const WarpState& w = b.warps[t_self->warp];
  return w.existing & ~w.exited;
}

void* dynamic_smem() {
  current_block("dynamic shared memory");
  return check::dynamic_smem_base();
}

void* static_smem(const void* key, size_t bytes, const char* name) {
  current_block("shared memory");
  return check::static_smem(key, bytes, name);
}

void fault(const std::string& message) {
  Block& b = current_block("a kernel fault");
  record_block_fault(b, thread_name(*t_self) + ": " + message);
  throw Cancelled{};
}

cudaError_t validate_launch(const LaunchConfig& cfg) {
  cudaError_t e = internal::sticky_error();
  const dim3 g = cfg.grid, bl = cfg.block;
  const uint64_t threads = uint64_t{bl.x} * bl.y * bl.z;
  if (e != cudaSuccess) {
  } else if (threads == 0 || threads > internal::kMaxThreadsPerBlock || bl.x > 1024 || bl.y > 1024 || bl.z > 64 ||
             g.x == 0 || g.y == 0 || g.z == 0 || g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535) {
    e = cudaErrorInvalidConfiguration;
  } else if (cfg.smem > internal::max_dynamic_smem(cfg.fn)) {
    e = cudaErrorInvalidValue;
  } else if (!internal::stream_valid(cfg.stream)) {
    e = cudaErrorInvalidResourceHandle;
  }
  if (e != cudaSuccess) internal::set_last_error(e);
  return e;
}

void launch(const LaunchConfig& cfg, KernelBody body, const void* ctx) {
  if (validate_launch(cfg) != cudaSuccess) return;
  const dim3 g = cfg.grid;

  const uint64_t blocks = uint64_t{g.x} * g.y * g.z;
  // The global-memory race shadow is per launch and not shared between workers: one runs all.
  const int nworkers = check::flags().memory() ? 1 : static_cast<int>(std::min<uint64_t>(worker_threads(), blocks));
  if (check::flags().memory()) check::global_launch_begin();
  // Under a schedule seed the blocks also run in a shuffled order (a permutation of the grid).
  std::vector<uint64_t> block_order;
  if (check::schedule_seed() != 0 && blocks <= (uint64_t{1} << 24)) {
    block_order.resize(blocks);
    for (uint64_t i = 0; i < blocks; ++i) block_order[i] = i;
    uint64_t rng = check::schedule_seed() * 0x2545f4914f6cdd1dull + blocks;
    for (uint64_t i = blocks; i > 1; --i) {
      rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
      std::swap(block_order[i - 1], block_order[rng % i]);
    }
  }
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::string fault_message;
  auto work = [&] {
    Worker& wk = this_worker();
    for (;;) {
      const uint64_t n = next++;
      if (n >= blocks || failed) break;
      const uint64_t i = block_order.empty() ? n : block_order[n];
      const uint3 bid{static_cast<unsigned>(i % g.x), static_cast<unsigned>((i / g.x) % g.y),
                      static_cast<unsigned>(i / (uint64_t{g.x} * g.y))};
      std::string why;
      if (!run_block(wk, cfg, body, ctx, bid, why)) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failed.exchange(true))
          fault_message = std::string("kernel ") + cfg.name + ", block (" + std::to_string(bid.x) + "," +
                          std::to_string(bid.y) + "," + std::to_string(bid.z) + "), " + why + check::seed_note();
        break;
      }
    }
  };
  if (nworkers <= 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    for (int i = 1; i < nworkers; ++i) pool.emplace_back(work);
    work();
    for (auto& th : pool) th.join();
  }
  if (failed) internal::record_fault(fault_message);
}

}  // namespace cuda_emu
