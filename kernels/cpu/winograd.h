#pragma once
// Winograd F(m x m, 3 x 3) for the stride-1 3x3 modulated convolution (kernels/cpu/winograd*.cpp).
// The modconv is x * s -> a conv with the static weight W -> * d (kernels/params.h), so the
// static-weight conv is a plain 3x3 conv and Winograd applies: each m x m output tile is
// A^T [ (G W G^T) . (B^T x B) ] A over an (m + 2)^2 input tile, which turns the 9 m^2 multiplies
// per (tile, Cin, Cout) of the direct conv into (m + 2)^2: 2.25x fewer for m = 2, 4x for m = 4.
// The (m + 2)^2 element-wise products over the channels are (m + 2)^2 independent GEMMs
// [tiles x Cin] x [Cin x Cout], run on the modconv micro-kernel (modconv_internal.h) of the ISA
// in use.
//
// Memory: the transformed weight G W G^T is (m + 2)^2 / 9 times the weight (4x for m = 4). It is
// made per call into the workspace, like the direct path's packed weight, in groups of output
// channels so that one group never takes more than the direct path's packed weight of the same
// layer (or kUFloorFloats, whichever is more): the plan's workspace, not hidden memory. Per
// thread: the transformed inputs of one tile block and its (m + 2)^2 accumulator tiles.
//
// Small images (at most kFusedMaxTiles tiles, modconv only) run the fused form instead
// (winograd_small.cpp): the input transformed once for all tiles, the weight per task and K
// block into L2, so the transformed weight is never written out.
//
// Where it runs, with which tile and in which form: the rule of conv_select.h.
#include <cstddef>
#include <cstdint>

#include "engine/core/tensor.h"
#include "kernels/cpu/conv_select.h"
#include "kernels/params.h"

namespace gpen::cpu::winograd_detail {

// The plans' arithmetic, for the ISA-independent halves (the per-ISA files keep their own:
// scripts/check_isa_symbols.py). odd_lines: floats rounded to an odd number of cache lines, the
// stride between points' slices of a per-point buffer, so the slices one tile's transform writes
// at once do not fall in a few L1 sets (the kernels' vstride / mstride follow the same rule).
inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t round_up(int64_t v, int64_t m) { return cdiv(v, m) * m; }
inline int64_t odd_lines(int64_t floats) { return floats / 16 % 2 ? floats : floats + 16; }

constexpr int64_t kMaxTileBlock = 30;   // tiles per task: each transformed weight element serves them all
constexpr int64_t kKcMax = 128;         // input channels per K block (bounds the per-thread scratch)
constexpr int64_t kCoChunkMax = 256;    // output channels per task (the input transform is redone per chunk)
constexpr int64_t kUFloorFloats = int64_t{4} << 20;  // a transformed-weight group may always take 16 MiB

struct WinoPlan {
  int m = 4, n = 6, nxi = 36;  // output tile, input tile, transformed points
  int64_t N = 0, H = 0, W = 0, C = 0, C1 = 0, C2 = 0, Co = 0;
  int64_t th = 0, tw = 0, ntiles = 0;  // tile grid
  int64_t T = 0, nblock = 0;           // tiles per block (a multiple of 6), blocks
  int64_t kc = 0, nkb = 0, kcs = 0;    // K block, their number, floats per transformed-input row
  int64_t cc = 0;                      // output channels per task (a multiple of 16)
  int64_t group_co = 0, ngroup = 0;    // output channels per transformed-weight group
  int64_t pstride = 0;                 // floats per 16-column panel of the transformed weight: nwp * C * 16
  int nwp = 0;                         // distinct points of the transformed weight (0: nxi; the polyphase forms fewer)
  int64_t u_floats = 0;                // one group of the transformed weight
  int64_t in_floats = 0;               // the input the tasks read (x with its concat): run_groups' task order
  int64_t off_v = 0, off_m = 0, off_sv = 0, off_b2v = 0, off_gs2 = 0, off_dv = 0, off_bv = 0, off_tmp = 0;
  int64_t per_thread = 0;
  // The fused small-image form (winograd_small.cpp): all tiles in one block, the transformed input
  // of the whole image shared (v_floats, kcs floats per row), the weight transformed per task and
  // K block into the thread's slice at off_v (ust floats per 16-column panel) instead of per group.
  bool fused = false;
  int64_t v_floats = 0, ust = 0;
  // The fused transposed form (winograd_up_fused.cpp): the accumulators of every output-channel
  // chunk persist over the K blocks (mchunk floats each, from off_mall in the shared part), and
  // rw / rh rows (N W and N H, rounded to the micro-kernel's 6) of each of the three rim GEMMs of
  // the last output row and of the last output column.
  int64_t mchunk = 0, off_mall = 0, rw = 0, rh = 0;
  // Below kUpFusedSplitMinTiles tiles every thread transforms the input into its own copy at
  // off_vt of its part, and the shared part holds the accumulators alone.
  bool private_v = false;
  int64_t off_vt = 0;
};

// u_budget: floats a transformed-weight group may take; 0: the modconv's rule (the direct path's
// packed weight of the layer, 9 C Co floats, or kUFloorFloats, whichever is more).
WinoPlan make_wino_plan(int m, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Co, int threads,
                        int64_t u_budget = 0);
// conv2d's direct path needs no copy of its weight, so its Winograd groups stay small: at most
// this many floats (5 MiB), and no Winograd where that leaves fewer than kConvMinGroup channels.
constexpr int64_t kConvUBudgetFloats = int64_t{5} << 18;
constexpr int64_t kConvMinGroup = 64;

// Raw pointers and strides of one modconv (filled from the TensorViews by winograd.cpp), so the
// per-ISA code needs no inline functions from other headers (scripts/check_isa_symbols.py).
struct WinoArgs {
  const float* x = nullptr;
  int64_t xs0 = 0, xs1 = 0, xs2 = 0, xs3 = 1;  // xs0 = 0: one x for every sample
  const float* x2 = nullptr;
  int64_t x2s0 = 0, x2s1 = 0, x2s2 = 0, x2s3 = 1;
  float x2_scale = 0.0f, x2_slope = 1.0f, x2_gain = 1.0f;
  const float* x2_bias = nullptr;
  int64_t x2bs = 1;
  const float* s = nullptr;
  int64_t ss0 = 0, ss1 = 1;
  const float* d = nullptr;  // null: no demodulation
  int64_t ds0 = 0, ds1 = 1;
  const float* bias = nullptr;
  int64_t bs = 1;
  const float* res = nullptr;
  int64_t rs0 = 0, rs1 = 0, rs2 = 0, rs3 = 1;
  float* y = nullptr;
  int64_t ys0 = 0, ys1 = 0, ys2 = 0, ys3 = 1;
  bool stream_y = false;  // y's whole aligned vectors by streaming stores (the transposed form: winograd_up.h)
  float gpos = 1.0f, gneg = 1.0f;  // act(v) = v * (v < 0 ? gneg : gpos)
  const float* w = nullptr;        // HWIO
  int64_t ws0 = 0, ws1 = 0, ws2 = 0, ws3 = 1;
  // 8-bit weights (engine/core/quant8.h) instead of w: codes HWIO with the strides above, one scale
  // per output channel (or per channel and group of wgroup reduction rows); dequantised as the
  // weight transform reads them, as the direct path does.
  const uint8_t* w8 = nullptr;
  const float* wscale = nullptr;
  bool fp8 = false;
  int64_t wcin = 0, wgroup = 0;  // per-group scales: reduction row k = tap * wcin + ci (quant8.h)
  // Input geometry: output pixel (oy, ox) reads input rows oy - pad .. oy - pad + 2 (zero outside
  // hin x win). pad 1, hin = H: the "same" conv; pad 0, hin = H + 2: a "valid" conv on an input
  // padded beforehand (ParseNet's reflection pad).
  int pad = 1;
  int64_t hin = 0, win = 0;
};

// The per-ISA halves (winograd_kernel.cpp): the transformed weight of the np (1 or 2) 16-column
// panels from `panel` (output channels 16 panel .. + 16 np, zero past Co) for input channels
// [c0, c1), written at `dst` (the next panel pstride floats on) in the layout [xi][C][16]; and
// one task: tile block `block`, output channels [o0, o0 + nco) of the group whose transformed
// weight is `u` (its first channel `group_o0`).
#define GPEN_WINO_ISA_DECLS                                                                                   \
  void transform_weight(const WinoPlan& pl, const WinoArgs& a, int64_t panel, int np, int64_t c0, int64_t c1, \
                        float* dst);                                                                           \
  void run_task(const WinoPlan& pl, const WinoArgs& a, int64_t block, int64_t o0, int64_t nco, const float* u, \
                int64_t group_o0, float* ws);
// The fused form's halves (pl.fused): the transformed input of tiles [t0, t1) into the shared
// v_all, and one task, output channels [o0, o0 + nco) of every tile.
#define GPEN_WINO_FUSED_DECLS                                                                                  \
  void fused_input(const WinoPlan& pl, const WinoArgs& a, int64_t t0, int64_t t1, float* v_all, float* ws);     \
  void fused_task(const WinoPlan& pl, const WinoArgs& a, int64_t o0, int64_t nco, const float* v_all, float* ws);
namespace isa_base {
GPEN_WINO_ISA_DECLS
GPEN_WINO_FUSED_DECLS
}
namespace isa_avx512 {
GPEN_WINO_ISA_DECLS
GPEN_WINO_FUSED_DECLS
}
#undef GPEN_WINO_ISA_DECLS
#undef GPEN_WINO_FUSED_DECLS

// A grouped form's per-ISA halves, with the signatures above (the transposed and the stride-2
// forms have their own of the same shape), and the loop over transformed-weight groups that runs
// them (winograd.cpp): each group's weight transform split between the threads, then its tasks.
struct WinoGroupFns {
  void (*transform)(const WinoPlan&, const WinoArgs&, int64_t panel, int np, int64_t c0, int64_t c1, float* dst);
  void (*task)(const WinoPlan&, const WinoArgs&, int64_t block, int64_t o0, int64_t nco, const float* u,
               int64_t group_o0, float* ws);
};
// The transformed-weight groups of the polyphase forms (winograd_up.cpp, winograd_s2.cpp): whole
// 16-column panels, at most budget_floats each (pairs where more than one fits), balanced; the
// output-channel chunk per task (at most co_chunk_max, halved until the threads have two tasks
// each); sets pstride, ngroup, group_co, cc and u_floats from the plan's nwp (or nxi), C, Co and nblock.
void plan_panel_groups(WinoPlan& pl, int64_t budget_floats, int64_t co_chunk_max, int threads);
// A tile block's scratch (its transformed inputs and accumulators) stays in the core's L2: once
// the plan has its K block and chunk, fit_tile_block lowers T (whole micro-tiles of 6, balanced
// over the tiles, nblock to match) until T x per_tile_floats fits tile_scratch_budget_bytes(),
// 5/8 of the L2 that sysconf reports per core (2 MiB where it reports none), or T reaches min_T.
// On an AMD EPYC (Zen 4, 1 MiB) GPEN-256's 64x64 and 128x128 stride-1 layers (1.2 and 0.9 MB at
// 30 tiles) ran 0.15-0.35 ms faster with 12 and 18 tiles, its 256x256 one (0.5 MB) slower below
// 30, R50's 64x48 layer3 convs 1.1-1.5 ms faster each with 6, and the m = 4 transposed form (81
// points a tile) best at 6-12 (min_T 12 there: GPEN-512's last up conv measured at 12;
// docs/benchmarks.md). The Xeons' 2 MiB keep GPEN-256's stride-1 layers at 30, the size
// their sweeps chose; there GPEN-512's and R50's wide layers (cc 256) take 18, not measured on a
// Xeon yet. Bits unchanged: each tile's sums run in the same order in any block.
int64_t tile_scratch_budget_bytes();
// Tests: the budget as on a CPU with l2_bytes of L2 per core (0: sysconf's again).
void set_tile_scratch_l2_bytes(int64_t l2_bytes);
void fit_tile_block(WinoPlan& pl, int64_t per_tile_floats, int64_t min_T = 6);
// The weight fields of WinoArgs: f32, or 8-bit codes with their scales (dequantised in the
// weight transform); and all of them for a conv2d (input, bias, residual, output, activation,
// weight), as the stride-1 and the stride-2 conv2d forms fill them.
void set_weight(WinoArgs& a, const TensorView& w);
WinoArgs conv2d_wino_args(const Conv2dParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
                          const TensorView* residual, const TensorView& y);
// base on the AVX2 path, wide on the AVX-512 one; workspace as the plan lays it out (u, then the
// per-thread slices).
void run_groups(const WinoPlan& pl, const WinoArgs& a, void* workspace, const WinoGroupFns& base,
                const WinoGroupFns& wide);

// The fused form applies up to this many tiles (all of them one block: every transformed weight
// element then serves every tile, and is made in L2 instead of written to memory once per call).
constexpr int64_t kFusedMaxTiles = 96;
// The fused plan for F(m x m, 3 x 3), or a plan with fused = false where it does not apply (more
// tiles).
WinoPlan make_wino_fused_plan(int m, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Co, int threads);
// The whole fused op (pl from make_wino_fused_plan, C1 / C2 set), workspace aligned by the caller.
void run_fused(const WinoPlan& pl, const WinoArgs& a, float* workspace);
// Images per run of a fused form: as many as fit kFusedMaxTiles tiles of m x m input positions
// (0: one image does not). Monotone in N, so a smaller batch never needs more workspace.
int64_t fused_images(int m, int64_t N, int64_t H, int64_t W);
// The args of images n0.. of a: every per-image pointer moved on by n0 images (a fused form runs a
// batch in chunks of fused_images, each a batch of its own).
WinoArgs images_from(const WinoArgs& a, int64_t n0);
// The whole op, c a winograd or winograd_fused choice (inputs already validated by modconv).
size_t modconv_winograd_workspace_bytes(const ConvChoice& c, const Shape& x_cat, const Shape& y, int threads);
void modconv_winograd(const ConvChoice& c, const ModConvParams& p, const ModConvArgs& a, const TensorView& y,
                      void* workspace);

// The static conv2d (RetinaFace's 3x3 convs) on the same machinery: s = 1, no concat, no
// demodulation, the transformed weight in groups of at most kConvUBudgetFloats.
size_t conv2d_winograd_workspace_bytes(int m, const Shape& x, const Shape& y, int threads);
// Inputs already validated by conv2d (f32, shapes).
void conv2d_winograd(int m, const Conv2dParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
                     const TensorView* residual, const TensorView& y, void* workspace);

}  // namespace gpen::cpu::winograd_detail
