// The GEMM family switch (ops_gemm.h). Host code only; a .cu so that the native and the emulated
// builds each have their own (they live in different inline namespaces).
#include <atomic>
#include <string>

#include "engine/core/error.h"
#include "kernels/cuda/ops_gemm.h"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

std::atomic<int> g_family{static_cast<int>(GemmFamily::mma)};
std::atomic<int> g_tile_bm{0}, g_tile_bn{0};

}  // namespace

GemmFamily parse_gemm_family(const char* name) {
  const std::string v = name ? name : "";
  if (v == "mma") return GemmFamily::mma;
  if (v == "wmma") return GemmFamily::wmma;
  throw Error("GPEN_CUDA_GEMM: unknown GEMM family '" + v + "' (expected mma or wmma)");
}

GemmFamily gemm_family() { return static_cast<GemmFamily>(g_family.load()); }

void set_gemm_family(GemmFamily f) { g_family = static_cast<int>(f); }

const char* gemm_family_name(GemmFamily f) { return f == GemmFamily::mma ? "mma" : "wmma"; }

cuda_tiles::MmaTile mma_tile(int64_t rows, int64_t cout, int64_t slices) {
  const int bm = g_tile_bm.load(), bn = g_tile_bn.load();
  if (bm > 0 && bn > 0) return {bm, bn};
  return cuda_tiles::choose_mma_tile(rows, cout, slices);
}

void set_mma_tile_override(cuda_tiles::MmaTile t) {
  const bool ok = (t.bm == 0 && t.bn == 0) || (t.bm == 128 && t.bn == 64) || (t.bm == 64 && t.bn == 64) ||
                  (t.bm == 64 && t.bn == 128);
  GPEN_CHECK(ok, "set_mma_tile_override: no mma kernel for a " + std::to_string(t.bm) + " x " +
                     std::to_string(t.bn) + " tile (128 x 64, 64 x 64, 64 x 128)");
  g_tile_bm = t.bm;
  g_tile_bn = t.bn;
}

GPEN_CUDA_NAMESPACE_END
