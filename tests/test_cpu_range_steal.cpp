// kernels/cpu/range_steal.h: every task runs exactly once whatever the team, each thread starts
// on its own contiguous share in order, and a thread left without work takes the others' tasks
// from their back ends.
#include <doctest/doctest.h>
#include <omp.h>

#include <atomic>
#include <vector>

#include "kernels/cpu/range_steal.h"

using gpen::cpu::RangeSteal;

TEST_CASE("range steal: every task exactly once, for any team size and task count") {
  for (int threads : {1, 2, 3, 4, 7}) {
    for (int64_t n : {0, 1, 2, 5, 64, 1000}) {
      CAPTURE(threads);
      CAPTURE(n);
      RangeSteal rs;
      rs.reset(n, threads);
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      for (auto& h : hits) h.store(0);
#pragma omp parallel num_threads(threads)
      {
        const int me = omp_get_thread_num();
        for (int64_t t; (t = rs.next(me)) >= 0;) hits[static_cast<size_t>(t)].fetch_add(1);
      }
      int wrong = 0;
      for (auto& h : hits) wrong += h.load() != 1;
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("range steal: own share front to back, then the others' from their back") {
  // One thread driving every "thread" by hand: the order is deterministic.
  RangeSteal rs;
  rs.reset(10, 2);  // shares [0, 5) and [5, 10)
  CHECK(rs.next(0) == 0);
  CHECK(rs.next(1) == 5);
  CHECK(rs.next(0) == 1);
  for (int64_t t = 6; t < 10; ++t) CHECK(rs.next(1) == t);
  CHECK(rs.next(1) == 4);  // its own share done: the back of thread 0's
  CHECK(rs.next(1) == 3);
  CHECK(rs.next(0) == 2);
  CHECK(rs.next(0) == -1);
  CHECK(rs.next(1) == -1);
}

TEST_CASE("range steal: a smaller team than asked for still runs the missing threads' shares") {
  RangeSteal rs;
  rs.reset(9, 3);  // [0, 3), [3, 6), [6, 9); only thread 0 comes
  std::vector<int64_t> order;
  for (int64_t t; (t = rs.next(0)) >= 0;) order.push_back(t);
  CHECK(order == std::vector<int64_t>{0, 1, 2, 5, 4, 3, 8, 7, 6});
  // Past kMaxRanges threads, thread t shares the range of thread t % kMaxRanges.
  RangeSteal big;
  big.reset(200, RangeSteal::kMaxRanges + 10);
  CHECK(big.next(RangeSteal::kMaxRanges + 3) == 3 * 200 / RangeSteal::kMaxRanges);  // thread 67: share 3's front
  // A range holds its ends in 32 bits each.
  CHECK_THROWS_WITH(big.reset(int64_t{1} << 32, 2), doctest::Contains("do not fit 32 bits"));
}
