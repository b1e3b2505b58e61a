// Feasibility of AMX for the Winograd point GEMMs (issue 16): is a bf16 split GEMM on the tile unit
// fast enough, and exact enough, to replace the AVX-512 fp32 micro-kernel? Not engine code: a
// prototype measured against the engine's own kernel on the same data, one thread.
//
// The split: x = x0 + x1 + x2, each bf16 (8 significant bits each, so three pieces hold fp32's 24),
// and a b ~ sum of the piece products whose magnitude is above 2^-24 a b: six (x0 y0, x0 y1, x1 y0,
// x0 y2, x1 y1, x2 y0), "bf16x3"; the three leading ones alone ("bf16x2", about 2^-16 relative).
// The pieces are laid one after another along K (A' = [a0 a0 a1 a0 a1 a2], B' = [b0 b1 b0 b2 b1 b0]),
// so one AMX GEMM over K' = 6K (or 3K) sums them all.
//
// Shape: the 36 point GEMMs of one F(4x4, 3x3) task, [M x K] x [K x N] each: M = 48 tiles, K = 128
// (one K block), N = 256 (one output-channel chunk); GFLOP/s count the fp32 GEMM's 2 M K N per
// point. "convert_b" is the weight side's conversion alone (hoisted out of the tasks in an engine
// form: made once per transformed-weight group); the GEMM runs include the A side's conversion.
// Counter max_rel: the largest |c - exact| / sum |a b| over the outputs, exact in double. hot:1
// gives every point the first point's weight (B in L2, not L3: the ceiling if the weight side
// were blocked to L2). BM_amx_peak: tile products on registers alone, no loads (the unit's own rate);
// BM_amx_l1: the 2 x 2 block's loop on data in L1 (what the tile loads leave of it).
// Results and what they mean: docs/benchmarks.md, "AMX for the point GEMMs" (session 16).
//   OMP_NUM_THREADS=1 build/bench/bench_cpu_amx_gemm --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/isa.h"
#include "kernels/cpu/modconv_internal.h"

// GCC 12 warns on its own headers' _mm512_undefined_epi32 in the widening and shift intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace {

constexpr int kPoints = 36, kM = 48, kK = 128, kN = 256;

// Asked once per process: the CPU's AMX-TILE and AMX-BF16 bits (leaf 7 EDX; clang's
// __builtin_cpu_supports has no names for them, and gcc's and clang's cpuid.h name the bits
// differently), then the kernel's grant of the tile state.
bool amx_usable() {
  static const bool usable = [] {
    unsigned a, b, c, d;
    if (!__builtin_cpu_supports("avx512bf16") || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    constexpr unsigned kAmxTile = 1u << 24, kAmxBf16 = 1u << 22;
    if (!(d & kAmxTile) || !(d & kAmxBf16)) return false;
    constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
  }();
  return usable;
}

struct alignas(64) TileConfig {
  uint8_t palette = 1, start = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

struct Data {
  std::vector<float> a, b, c;   // a [pt][M][K]; b [pt][N/16][K][16] (the engine's panels); c [pt][M][N]
  std::vector<double> exact, scale;
  Data() : a(size_t(kPoints) * kM * kK), b(size_t(kPoints) * kK * kN), c(size_t(kPoints) * kM * kN) {
    std::mt19937 g(7);
    std::normal_distribution<float> nd;
    for (float& v : a) v = nd(g);
    for (float& v : b) v = nd(g) * 0.05f;
    exact.resize(c.size());
    scale.resize(c.size());
    for (int pt = 0; pt < kPoints; ++pt)
      for (int m = 0; m < kM; ++m)
        for (int n = 0; n < kN; ++n) {
          double s = 0, sa = 0;
          for (int k = 0; k < kK; ++k) {
            const double p = double(A(pt, m, k)) * double(B(pt, k, n));
            s += p, sa += std::fabs(p);
          }
          exact[(size_t(pt) * kM + m) * kN + n] = s;
          scale[(size_t(pt) * kM + m) * kN + n] = sa;
        }
  }
  float A(int pt, int m, int k) const { return a[(size_t(pt) * kM + m) * kK + k]; }
  float B(int pt, int k, int n) const { return b[((size_t(pt) * (kN / 16) + n / 16) * kK + k) * 16 + n % 16]; }
  double max_rel() const {
    double e = 0;
    for (size_t i = 0; i < c.size(); ++i) e = std::max(e, std::fabs(double(c[i]) - exact[i]) / scale[i]);
    return e;
  }
};

Data& data() {
  static Data d;
  return d;
}

void BM_fp32_avx512(benchmark::State& st) {
  if (!gpen::cpu::cpu_has_avx512()) {
    st.SkipWithError("no AVX-512");
    return;
  }
  Data& d = data();
  const bool hot = st.range(0);
  for (auto _ : st)
    for (int pt = 0; pt < kPoints; ++pt)
      for (int j = 0; j < kN; j += 32)
        for (int m = 0; m < kM; m += 12)
          gpen::cpu::modconv_detail::isa_avx512::micro_kernel12(
              d.a.data() + (size_t(pt) * kM + m) * kK, kK, kK, d.b.data() + (size_t(hot ? 0 : pt) * (kN / 16) + j / 16) * kK * 16,
              kK * 16, d.c.data() + (size_t(pt) * kM + m) * kN + j, kN, false);
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * kPoints * kM * kK * kN * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  if (!hot) st.counters["max_rel"] = d.max_rel();
}

// The pieces of 16 floats: hi = bf16(x), mid = bf16(x - hi), lo = bf16(x - hi - mid), each as 16 x u16.
__attribute__((target("avx512f,avx512bw,avx512bf16"))) inline void split16(const float* x, __m256i* p) {
  __m512 r = _mm512_loadu_ps(x);
  for (int i = 0; i < 3; ++i) {
    const __m256bh h = _mm512_cvtneps_pbh(r);
    p[i] = reinterpret_cast<const __m256i&>(h);
    r = _mm512_sub_ps(r, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(p[i]), 16)));
  }
}

// The piece (of A, of B) for each K' segment.
constexpr int kApiece[6] = {0, 0, 1, 0, 1, 2}, kBpiece[6] = {0, 1, 0, 2, 1, 0};

// B' of one point: [N/16 panels][K'/2][16][2] bf16 (the tile unit's pair layout), K' = S K.
template <int S>
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void convert_b(const float* b, uint16_t* bp) {
  constexpr int Kp = S * kK;
  for (int j = 0; j < kN / 16; ++j)
    for (int k = 0; k < kK; k += 2) {
      __m256i p0[3], p1[3];
      split16(b + (size_t(j) * kK + k) * 16, p0);
      split16(b + (size_t(j) * kK + k + 1) * 16, p1);
      for (int s = 0; s < S; ++s) {
        const __m256i lo = _mm256_unpacklo_epi16(p0[kBpiece[s]], p1[kBpiece[s]]);
        const __m256i hi = _mm256_unpackhi_epi16(p0[kBpiece[s]], p1[kBpiece[s]]);
        // unpack works within 128-bit lanes: columns 0-3, 8-11 in lo, 4-7, 12-15 in hi.
        uint16_t* dst = bp + (size_t(j) * Kp / 2 + (s * kK + k) / 2) * 32;
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm256_permute2x128_si256(lo, hi, 0x20));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 16), _mm256_permute2x128_si256(lo, hi, 0x31));
      }
    }
}

// A' of one point: [K'/32][M][32] bf16, so that each tile the GEMM loads is 1 KiB in one piece.
inline size_t a_index(int m, int k) { return (size_t(k / 32) * kM + m) * 32 + k % 32; }
template <int S>
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void convert_a(const float* a, uint16_t* ap) {
  for (int m = 0; m < kM; ++m)
    for (int k = 0; k < kK; k += 16) {
      __m256i p[3];
      split16(a + size_t(m) * kK + k, p);
      for (int s = 0; s < S; ++s)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(ap + a_index(m, s * kK + k)), p[kApiece[s]]);
    }
}

// C[rows m.. m + 16 RB, columns j.. j + 32] (+)= A' B' over K' [k0, k1) on the tile unit: RB x 2
// C tiles (tmm0-3), RB A tiles (tmm4-5), two B tiles (tmm6-7); with RB = 2 each tile loaded
// serves two products. tileloadd waits on every line it misses in L1, so the next step's tiles
// are prefetched one step ahead.
template <int RB, int Kp>
__attribute__((target("amx-tile,amx-bf16,sse"))) inline void amx_block(const uint16_t* ap, const uint16_t* bp, float* c,
                                                                        int m, int j, int k0, int k1) {
  float* c0 = c + size_t(m) * kN + j;
  if (k0 == 0) {
    _tile_zero(0);
    _tile_zero(1);
    if (RB == 2) {
      _tile_zero(2);
      _tile_zero(3);
    }
  } else {
    _tile_loadd(0, c0, kN * 4);
    _tile_loadd(1, c0 + 16, kN * 4);
    if (RB == 2) {
      _tile_loadd(2, c0 + 16 * kN, kN * 4);
      _tile_loadd(3, c0 + 16 * kN + 16, kN * 4);
    }
  }
  const uint16_t* b0 = bp + size_t(j / 16) * Kp * 16;
  const uint16_t* b1 = b0 + size_t(Kp) * 16;
  for (int k = k0; k < k1; k += 32) {
    if (k + 32 < k1)
      for (int r = 0; r < 16; ++r) {
        _mm_prefetch(reinterpret_cast<const char*>(ap + a_index(m + r, k + 32)), _MM_HINT_T0);
        if (RB == 2) _mm_prefetch(reinterpret_cast<const char*>(ap + a_index(m + 16 + r, k + 32)), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(b0 + (k + 32) * 16 + r * 32), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(b1 + (k + 32) * 16 + r * 32), _MM_HINT_T0);
      }
    _tile_loadd(4, ap + a_index(m, k), 64);
    _tile_loadd(6, b0 + k * 16, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_loadd(7, b1 + k * 16, 64);
    _tile_dpbf16ps(1, 4, 7);
    if (RB == 2) {
      _tile_loadd(5, ap + a_index(m + 16, k), 64);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  _tile_stored(0, c0, kN * 4);
  _tile_stored(1, c0 + 16, kN * 4);
  if (RB == 2) {
    _tile_stored(2, c0 + 16 * kN, kN * 4);
    _tile_stored(3, c0 + 16 * kN + 16, kN * 4);
  }
}

// C[M x N] = A' B', K' in chunks of kKc so that the A' rows of a block pair stay in L1 (32 rows of
// 6K bf16 are all of a 48 KiB L1 for bf16x3), 32 x 32 blocks then 16 x 32 for the rows left.
constexpr int kKc = 256;
template <int S>
__attribute__((target("amx-tile,amx-bf16,sse"))) void amx_gemm(const uint16_t* ap, const uint16_t* bp, float* c) {
  constexpr int Kp = S * kK;
  for (int k0 = 0; k0 < Kp; k0 += kKc) {
    const int k1 = std::min(Kp, k0 + kKc);
    for (int j = 0; j < kN; j += 32) {
      int m = 0;
      for (; m + 32 <= kM; m += 32) amx_block<2, Kp>(ap, bp, c, m, j, k0, k1);
      for (; m < kM; m += 16) amx_block<1, Kp>(ap, bp, c, m, j, k0, k1);
    }
  }
}

__attribute__((target("amx-tile"))) void load_config() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) cfg.rows[t] = 16, cfg.colsb[t] = 64;
  // GCC 12 does not see that ldtilecfg reads the whole 64 bytes and drops the stores past the first 16.
  __asm__ volatile("" : : "r"(&cfg) : "memory");
  _tile_loadconfig(&cfg);
}
__attribute__((target("amx-tile"))) void release_tiles() { _tile_release(); }

template <int S>
void BM_amx(benchmark::State& st) {
  if (!amx_usable()) {
    st.SkipWithError("no AMX-BF16 (or the kernel does not grant the tile state)");
    return;
  }
  Data& d = data();
  const bool hot = st.range(0);
  std::vector<uint16_t> bp(size_t(kPoints) * kN * S * kK), ap(size_t(kM) * S * kK);
  for (int pt = 0; pt < kPoints; ++pt) convert_b<S>(d.b.data() + size_t(pt) * kK * kN, bp.data() + size_t(pt) * kN * S * kK);
  load_config();
  for (auto _ : st)
    for (int pt = 0; pt < kPoints; ++pt) {
      convert_a<S>(d.a.data() + size_t(pt) * kM * kK, ap.data());
      amx_gemm<S>(ap.data(), bp.data() + (hot ? 0 : size_t(pt) * kN * S * kK), d.c.data() + size_t(pt) * kM * kN);
    }
  release_tiles();
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * kPoints * kM * kK * kN * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  if (!hot) st.counters["max_rel"] = d.max_rel();
}

template <int S>
void BM_convert_b(benchmark::State& st) {
  if (!amx_usable()) {
    st.SkipWithError("no AMX-BF16");
    return;
  }
  Data& d = data();
  std::vector<uint16_t> bp(size_t(kPoints) * kN * S * kK);
  for (auto _ : st)
    for (int pt = 0; pt < kPoints; ++pt)
      convert_b<S>(d.b.data() + size_t(pt) * kK * kN, bp.data() + size_t(pt) * kN * S * kK);
  benchmark::DoNotOptimize(bp.data());
}

__attribute__((target("amx-tile,amx-bf16"))) void amx_peak_loop(int64_t n) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_zero(4);
  _tile_zero(5);
  _tile_zero(6);
  _tile_zero(7);
  for (int64_t i = 0; i < n; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
}

void BM_amx_peak(benchmark::State& st) {
  if (!amx_usable()) {
    st.SkipWithError("no AMX-BF16");
    return;
  }
  constexpr int64_t kLoop = 1 << 16;
  load_config();
  for (auto _ : st) amx_peak_loop(kLoop);
  release_tiles();
  // bf16 flops of the products (each 16 x 16 x 32 multiply-adds).
  st.counters["bf16 GFLOP/s"] =
      benchmark::Counter(4.0 * kLoop * 16 * 16 * 32 * 2 * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// The 2 x 2 block's inner loop on 16 KiB of A' and B' that stay in L1: four tile loads per four
// products, the least a 2 x 2 block can load (eight tile registers hold no more).
__attribute__((target("amx-tile,amx-bf16"))) void amx_l1_loop(const uint16_t* ap, const uint16_t* bp, float* c,
                                                               int64_t n) {
  constexpr int kSteps = 8;
  for (int64_t i = 0; i < n; ++i) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int k = 0; k < kSteps; ++k) {
      _tile_loadd(4, ap + k * 1024, 64);
      _tile_loadd(5, ap + k * 1024 + 512, 64);
      _tile_loadd(6, bp + k * 512, 64);
      _tile_loadd(7, bp + (kSteps + k) * 512, 64);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, c, 128);
    _tile_stored(1, c + 16, 128);
    _tile_stored(2, c + 512, 128);
    _tile_stored(3, c + 528, 128);
  }
}

void BM_amx_l1(benchmark::State& st) {
  if (!amx_usable()) {
    st.SkipWithError("no AMX-BF16");
    return;
  }
  constexpr int64_t kLoop = 1 << 13;
  std::vector<uint16_t> a(8 * 1024, 0x3f80), b(16 * 512, 0x3f80);
  std::vector<float> c(32 * 32);
  load_config();
  for (auto _ : st) amx_l1_loop(a.data(), b.data(), c.data(), kLoop);
  release_tiles();
  st.counters["bf16 GFLOP/s"] =
      benchmark::Counter(32.0 * kLoop * 16 * 16 * 32 * 2 * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(BM_amx_peak)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_amx_l1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_fp32_avx512)->ArgName("hot")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_amx, 6)->Name("BM_amx_bf16x3")->ArgName("hot")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_amx, 3)->Name("BM_amx_bf16x2")->ArgName("hot")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_convert_b, 6)->Name("BM_convert_b_bf16x3")->Unit(benchmark::kMicrosecond);
BENCHMARK_TEMPLATE(BM_convert_b, 3)->Name("BM_convert_b_bf16x2")->Unit(benchmark::kMicrosecond);

int main(int argc, char** argv) {
  benchmark::AddCustomContext("cpu_isa", gpen::cpu::isa_name(gpen::cpu::cpu_isa()));
  benchmark::AddCustomContext("amx_bf16", amx_usable() ? "yes" : "no");
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
#else
#include <cstdio>
int main() { std::puts("bench_cpu_amx_gemm: x86-64 only"); }
#endif
