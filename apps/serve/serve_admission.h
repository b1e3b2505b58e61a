#pragma once
// The bounded request queue of `gpen serve` (--queue): a request that needs the engine holds a
// slot from the moment its headers are accepted until its answer is written; when every slot is
// taken the next one is answered 503 at once. Request memory is bounded by it: at most `limit`
// bodies (each at most --max-body) and their images exist at a time.
#include <atomic>
#include <utility>

namespace gpen::serve {

class Admission {
 public:
  explicit Admission(int limit) : limit_(limit) {}
  int limit() const { return limit_; }
  int depth() const { return depth_.load(std::memory_order_relaxed); }

  // A slot, released when it goes out of scope; empty (false) when the queue is full.
  class Ticket {
   public:
    Ticket() = default;
    explicit Ticket(Admission* a) : a_(a) {}
    Ticket(Ticket&& o) noexcept : a_(std::exchange(o.a_, nullptr)) {}
    Ticket& operator=(Ticket&& o) noexcept {
      if (this != &o) {
        release();
        a_ = std::exchange(o.a_, nullptr);
      }
      return *this;
    }
    ~Ticket() { release(); }
    explicit operator bool() const { return a_ != nullptr; }

   private:
    void release() {
      if (a_) a_->depth_.fetch_sub(1, std::memory_order_relaxed);
      a_ = nullptr;
    }
    Admission* a_ = nullptr;
  };

  Ticket try_enter() {
    int d = depth_.load(std::memory_order_relaxed);
    while (d < limit_)
      if (depth_.compare_exchange_weak(d, d + 1, std::memory_order_relaxed)) return Ticket(this);
    return Ticket();
  }

 private:
  const int limit_;
  std::atomic<int> depth_{0};
};

}  // namespace gpen::serve
