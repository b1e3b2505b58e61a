// What one OpenMP fork / join costs on this VM when the worker finishes 10 % after the caller:
// `g++ -O2 -fopenmp fork_cost.cpp -o fork_cost && GOMP_SPINCOUNT=1000 ./fork_cost GAP_US BODY_US`
// (GAP_US of serial work between regions, BODY_US of work in each). Prints the time per
// iteration beyond the work itself.
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

static void busy(int us) {
  const auto t = std::chrono::steady_clock::now();
  while (std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count() < us) {
  }
}

int main(int argc, char** argv) {
  if (argc < 3) return std::fprintf(stderr, "usage: fork_cost GAP_US BODY_US\n"), 2;
  const int gap = std::atoi(argv[1]), body = std::atoi(argv[2]), n = 2000;
  omp_set_num_threads(2);
#pragma omp parallel
  busy(10);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; i++) {
    busy(gap);
#pragma omp parallel
    busy(body + (omp_get_thread_num() ? body / 10 : 0));
  }
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
  std::printf("gap %d us, body %d us: %.1f us per iteration, %.1f us beyond the work\n", gap, body, us,
              us - gap - body - body / 10.0);
}
