#pragma once
// Winograd for the 3x3 stride-2 transposed modulated conv (modconv with up, GPEN's decoder
// upsampling convs) by polyphase decomposition (kernels/cpu/winograd_up*.cpp).
//
// y[2a + ky, 2b + kx] += x[a, b] W[ky, kx] splits by output phase into four stride-1 convs on
// the same input: even rows see the taps ky = 0, 2 (x[a] W0 + x[a - 1] W2: a 2-tap correlation
// over x padded by one), odd rows the tap ky = 1 (x[a] W1), and the same along the columns. A
// tile of m input-grid positions thus gives 2m outputs along an axis from m + 1 inputs: the even
// ones by Winograd F(m, 2) (m + 1 transformed points), the odd ones by a copy (m points). The
// 1-D transform is the stack of both, 2m + 1 points, and its 2-D product holds all four phases:
// for m = 4, 81 = 25 (2x2 kernel, F(4x4, 2x2)) + 2 x 20 (2x1 and 1x2) + 16 (1x1) products per
// 8 x 8 outputs where the direct form takes 144 (9 taps per 4 outputs): 1.78x fewer multiplies,
// 1.44x for m = 2 (25 per 4 x 4). Transforms (points 0, 1, -1, 2, infinity for F(4, 2)):
// integer B^T, A^T up to 8, G up to 1/2; the odd-phase rows are exact copies.
//
// As for the stride-1 Winograd (winograd.h, whose WinoPlan / WinoArgs this reuses): the
// (2m + 1)^2 GEMMs [tiles x C] x [C x Cout] run on the modconv micro-kernel; the transformed
// weight ((2m + 1)^2 / 9 times the weight: 9x for m = 4) is made per call into the workspace in
// groups of output channels, each at most the direct path's packed weight of the layer or
// kUFloorFloats, whichever is more (so the op's workspace stays at or below what the graph's
// largest conv already plans); per thread, one tile block's transformed inputs and accumulators.
// The up conv has no epilogue (kernels/params.h): the output is the raw conv, 2H + 1 x 2W + 1.
//
// Where it runs, with which tile and in which form: the rule of conv_select.h.
#include <cstddef>
#include <cstdint>

#include "kernels/cpu/winograd.h"

namespace gpen::cpu::winograd_detail {

// Tiles per task (a multiple of 6: the micro-kernel's rows) and output channels per task; the K
// block is winograd.h's kKcMax. Chosen by the sweep in docs/benchmarks.md (T 24..96, K block
// 32..128, chunk 32..128): about 2 MB of scratch per thread, less where the core's L2 asks
// (fit_tile_block, winograd.h: m = 4's 81 points a tile take 12-18 tiles on 1-2 MiB of L2).
constexpr int64_t kUpMaxTileBlock = 30;
constexpr int64_t kUpCoChunkMax = 64;

// The plan in WinoPlan's fields: m (input positions per tile), n = m + 1 (input tile),
// nxi = (2m + 1)^2 points; H, W the input's size; th x tw tiles cover H + 1 x W + 1 positions.
WinoPlan make_wino_up_plan(int m, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Co, int threads);

// The fused form for small images (winograd_up_fused.cpp), m = 4 only: H and W multiples of 4, so
// th = H / 4 x tw = W / 4 tiles cover the outputs but the last even row and column exactly (no
// tile of mostly padding), and those two come from six more GEMMs on points the transforms
// already hold (winograd_up_kernel.cpp says how); at most kFusedMaxTiles tiles. Per K block of
// kUpFusedKc channels the input is transformed for every tile, and per chunk of kUpFusedCc output
// channels a slice of the weight is transformed into L2 and the 87 GEMMs run into the chunk's
// accumulators, which persist over the K blocks (the transformed input of every channel at once
// would be 11 MB for GPEN-256's 32x32 layer, 512 channels). How the threads share that
// (winograd_up_fused.cpp): each owns a share of the 81 points, or below kUpFusedSplitMinTiles
// its own copy of the transformed input and a share of the chunks. The plan, or one with
// fused = false where it does not apply (another shape).
constexpr int64_t kUpFusedKc = 64;
constexpr int64_t kUpFusedCc = 32;
// Up to kUpFusedSplitMax threads, on at least kUpFusedSplitMinTiles tiles, each owns a share of
// the 81 points (winograd_up_fused.cpp); otherwise the threads split the tiles' transform and then
// the chunks (each thread of the point split transforms every tile and its chunks' whole weight
// slices, a cost the GEMMs of few tiles do not repay).
constexpr int kUpFusedSplitMax = 4;
constexpr int64_t kUpFusedSplitMinTiles = 32;
// The same at any thread count: the chunks go to the threads by a static schedule.
WinoPlan make_wino_up_fused_plan(int64_t N, int64_t H, int64_t W, int64_t C, int64_t Co);
// The whole fused op (pl from make_wino_up_fused_plan, C1 / C2 set), workspace aligned by the caller.
void run_up_fused(const WinoPlan& pl, const WinoArgs& a, float* workspace);

// One thread's share of the fused form's 81 points (bit py * 9 + px of bits): it transforms the
// input of those points alone and runs their GEMMs for every chunk, and the six rim GEMMs where
// rim. Data only: the per-ISA halves read it (no inline function shared across ISAs).
struct UpPoints {
  uint64_t bits[2] = {0, 0};
  bool rim = false;
};

// The per-ISA halves (winograd_up_kernel.cpp): the grouped form's weight transform and task, as
// winograd.h's; the fused form's input transform of K block kb for tiles [t0, t1) and the points
// own holds into the shared v, its GEMMs of K block kb for output channels [o0, o0 + nco) and
// own's points into their accumulators mc, and the chunk's outputs from mc after the last K block.
#define GPEN_WINO_UP_ISA_DECLS                                                                               \
  void up_transform_weight(const WinoPlan& pl, const WinoArgs& a, int64_t panel, int np, int64_t c0,  \
                           int64_t c1, float* dst);                                                          \
  void up_run_task(const WinoPlan& pl, const WinoArgs& a, int64_t block, int64_t o0, int64_t nco, const float* u, \
                   int64_t group_o0, float* ws);                                                                \
  void up_fused_input(const WinoPlan& pl, const WinoArgs& a, int64_t kb, int64_t t0, int64_t t1,                 \
                      const UpPoints& own, float* v, float* ws);                                                 \
  void up_fused_task(const WinoPlan& pl, const WinoArgs& a, int64_t kb, int64_t o0, int64_t nco,                 \
                     const UpPoints& own, const float* v, float* mc, float* ws);                                 \
  void up_fused_output(const WinoPlan& pl, const WinoArgs& a, int64_t o0, int64_t nco, float* mc, float* ws);
namespace isa_base {
GPEN_WINO_UP_ISA_DECLS
}
namespace isa_avx512 {
GPEN_WINO_UP_ISA_DECLS
}
#undef GPEN_WINO_UP_ISA_DECLS

// Outputs of at least this many bytes are written with streaming stores (both forms). The
// transposed conv's raw output is read once, by the blur right after it (GPEN's upsampling
// StyledConvs), which streams it back at about the same speed from memory as from the cache; plain
// stores would first read every line of the arena being overwritten. On an AMD EPYC (Zen 4,
// docs/benchmarks.md): GPEN-256's up convs from 32x32 to 128x128 (2.2-8.5 MB outputs) 0.10-0.20
// ms faster each, their blurs 0.02-0.04 ms slower, the forward's sum of node minima 48.4 -> 47.5 ms;
// the 16x16 one's 1.1 MB output about level, so it keeps plain stores. Same bits.
constexpr int64_t kUpStreamMinBytes = int64_t{2} << 20;
// Tests: the threshold in bytes (0: kUpStreamMinBytes again).
int64_t up_stream_min_bytes();
void set_up_stream_min_bytes(int64_t bytes);

// The whole op, c a winograd_up or winograd_up_fused choice (m = c.tile input positions per tile
// and axis; inputs already validated by modconv).
size_t modconv_winograd_up_workspace_bytes(const ConvChoice& c, const Shape& x_cat, const Shape& y, int threads);
void modconv_winograd_up(const ConvChoice& c, const ModConvParams& p, const ModConvArgs& a, const TensorView& y,
                         void* workspace);

}  // namespace gpen::cpu::winograd_detail
