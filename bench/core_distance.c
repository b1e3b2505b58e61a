// Prints how far apart the first two CPUs this process may run on are: the mean time, in ns, of one
// round trip of a cache line between two threads pinned to them (200000 trips). On the 2-vCPU Zen 4
// VM of docs/benchmarks.md it reads 50-80 ns while the vCPUs sit on one CCD and 300-350
// ns while the host has put them on two, and it changes within seconds; a 2-thread GPEN-256 forward
// took 47-50 ms in the first state and 62-68 in the second, so bench/cpu_peers.sh records it around
// every invocation. Build: cc -O2 -pthread bench/core_distance.c -o build/core_distance
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

enum { kTrips = 200000 };
static _Alignas(64) atomic_int g_turn;
static int g_cpu[2];

static int pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  return pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static void* partner(void* arg) {
  (void)arg;
  pin(g_cpu[1]);  // unpinned, it still answers (the figure then means less)
  for (int i = 0; i < kTrips; ++i) {
    while (atomic_load_explicit(&g_turn, memory_order_acquire) != 2 * i + 1) {
    }
    atomic_store_explicit(&g_turn, 2 * i + 2, memory_order_release);
  }
  return NULL;
}

int main(void) {
  cpu_set_t mask;
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) {
    perror("core_distance: sched_getaffinity");
    return 1;
  }
  int found = 0;
  for (int c = 0; c < CPU_SETSIZE && found < 2; ++c)
    if (CPU_ISSET(c, &mask)) g_cpu[found++] = c;
  if (found < 2) {
    fprintf(stderr, "core_distance: this process may run on one CPU only\n");
    return 1;
  }
  if (pin(g_cpu[0]) != 0) {
    fprintf(stderr, "core_distance: cannot pin to CPU %d\n", g_cpu[0]);
    return 1;
  }
  pthread_t t;
  if (pthread_create(&t, NULL, partner, NULL) != 0) {
    perror("core_distance: pthread_create");
    return 1;
  }
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < kTrips; ++i) {
    atomic_store_explicit(&g_turn, 2 * i + 1, memory_order_release);
    while (atomic_load_explicit(&g_turn, memory_order_acquire) != 2 * i + 2) {
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  pthread_join(t, NULL);
  printf("%.0f\n", ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / kTrips);
  return 0;
}
