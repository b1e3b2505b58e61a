// LD_PRELOAD counter of OpenMP parallel regions by outlined function (symbolise the printed
// offsets with addr2line -f -C -e build/gpen), and of GOMP_barrier calls (the ends of static loops
// inside a region, and explicit barriers):
// cc -O2 -shared -fPIC -o omp_regions.so omp_regions.c -ldl
// LD_PRELOAD=$PWD/omp_regions.so build/gpen --threads 2 bench ... --runs 10 --warmup 0
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

static void* fns[256];
static long cnt[256];
static long barriers;
typedef void (*par_t)(void (*)(void*), void*, unsigned, unsigned);

void GOMP_parallel(void (*fn)(void*), void* data, unsigned n, unsigned flags) {
  static par_t real;
  if (!real) real = (par_t)dlsym(RTLD_NEXT, "GOMP_parallel");
  int i = 0;
  while (i < 256 && fns[i] && fns[i] != (void*)fn) i++;
  if (i < 256) fns[i] = (void*)fn, cnt[i]++;
  real(fn, data, n, flags);
}

void GOMP_barrier(void) {
  static void (*real)(void);
  if (!real) real = (void (*)(void))dlsym(RTLD_NEXT, "GOMP_barrier");
  __atomic_fetch_add(&barriers, 1, __ATOMIC_RELAXED);
  real();
}

__attribute__((destructor)) static void done(void) {
  fprintf(stderr, "%ld GOMP_barrier calls\n", barriers);
  for (int i = 0; i < 256 && fns[i]; i++) {
    Dl_info d;
    dladdr(fns[i], &d);
    fprintf(stderr, "%ld regions at offset %lx\n", cnt[i], (unsigned long)((char*)fns[i] - (char*)d.dli_fbase));
  }
}
