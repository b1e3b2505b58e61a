#include <omp.h>

#include "kernels/cpu/ops.h"

namespace gpen::cpu {

namespace {
int g_threads = 0;
}

void set_num_threads(int n) {
  g_threads = n > 0 ? n : omp_get_num_procs();
  omp_set_num_threads(g_threads);
}

int num_threads() { return g_threads > 0 ? g_threads : omp_get_max_threads(); }

}  // namespace gpen::cpu
