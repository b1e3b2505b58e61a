// The CPU conv rule (overview: conv_select.h): the table of rows, tried top to bottom.
//
// Where each row's thresholds come from (measured on the machines of docs/benchmarks.md, in the
// graph and with bench/bench_cpu_*; the one-thread CPU time and both ISA paths where it says so):
//  - stride-1 modconv F(4x4) from 48 px with 32+ channels: where whole tiles outweigh the edges and
//    the channels outweigh the transforms (docs/benchmarks.md, Winograd).
//  - stride-1 modconv F(4x4) from 32 px with C >= 256, Co >= 128, C Co <= 512 x 256: GPEN-256's
//    32x32 StyledConv (512 -> 256 with the noise concat) 1.3-1.6x faster than the direct path;
//    GPEN-512's (1024 -> 512) only at parity, its per-call weight transform four times larger
//    (bench_cpu_gpen256). At 32..47 px the form rule then runs it fused where it has <= 96 tiles.
//  - the fused form (winograd_small.cpp: at most 96 tiles, the weight transformed in L2, never
//    written out) from 16 px and 256 -> 128 channels up: the 16x16 512 -> 256 layer 1.8x faster
//    than the direct path, the 32x32 1024 -> 512 one 2.1x (1 thread). At 8x8 F(4x4) on the AVX-512
//    path (GPEN-256's convs.1 0.81 -> 0.75 ms, GPEN-512's 3.89 -> 3.06 against F(2x2)), F(2x2) on
//    the AVX2 path (F(4x4) measured 0.84 -> 0.89 and 3.41 -> 3.55 ms there); 4x4 stays direct
//    (0.15 -> 0.33 ms with F(4x4)). Per image, not per batch: a batch runs in chunks of images
//    (fused_images), so the choice and the workspace never shrink as the batch grows (a short last
//    batch must fit the full one's plan).
//  - conv2d F(4x4) from 24 px with 32+ channels: RetinaFace R50's layer4 and stride-32 SSH convs
//    of a 1024x768 photo 1.3x to 2x (bench_cpu_r50), not at 12x16, where the per-call weight
//    transform outweighs the GEMMs it saves. Its transformed weight stays within 5 MiB a group
//    (conv2d's direct path keeps no copy of its weight to compare with).
//  - stride-2 conv2d, polyphase (bench_cpu_conv2d_s2, in the graph, alternating processes):
//    32..64 input channels from 256x256 outputs F(4x4) (GPEN-512's ecd1, 64 -> 128, 43.6 ms
//    against F(2x2)'s 44.7); 16..64 from 64x64 F(2x2) (GPEN-256's ecd1 and ecd2: 3.25 against
//    3.66 ms, 2.88 against 3.29; both ISAs 1.0-1.25x); 65..128 from 32x32 F(2x2), ahead of F(4x4)
//    wherever both were measured (GPEN-256's ecd3 2.82 against direct's 3.10, GPEN-512's ecd2 41.2
//    against F(4x4)'s 42.5 and direct's 50.8, R50's layer2.0 conv2 17.4 against 19.5 and 20.0);
//    129..512 from 32x32 and, on the AVX-512 path, 129..256 from 16x16 F(2x2): GPEN-256's ecd4
//    (256 -> 256, 16x16) 1.51 -> 1.35 ms (the AVX2 path 1.55 -> 1.66, so direct there), GPEN-512's
//    ecd3 44.9 -> 37.4 (AVX2 46.0 -> 40.3) and ecd4 27.1 -> 20.8 (AVX2 25.5 -> 22.9), R50's layer3.0
//    conv2 16.8 -> 14.2. Smaller maps stay direct (GPEN-512's ecd5, 512 at 16x16, 6.7 -> 8.7 ms;
//    GPEN-256's ecd5, 256 at 8x8, 0.47 -> 0.58): each transformed-weight element serves one tile
//    block per load, where the direct path's GEMM reuses its weight over every pixel.
//  - transposed modconv F(4, 2) in groups from 64x64 inputs with 32..256 channels: GPEN-256's
//    64 -> 129 (128 -> 64 channels) 4.75 -> 4.61 and 128 -> 257 (64 -> 32) 4.80 -> 4.66 ms ahead
//    of F(2, 2), GPEN-512's 256 -> 513 (256 -> 64) 71.6 -> 66.5 ms, with tile blocks of 12 on an
//    AMD EPYC (Zen 4); above 256 channels the transformed weight, streamed from L3 once per tile
//    block, costs more than the multiplies it saves. The fused form from 16x16 at C >= 256,
//    Co >= 128: GPEN-256's 16x16 and 32x32 up convs 1.13-1.18x and 1.25-1.32x faster than the
//    direct path in the graph, GPEN-512's 1.06x and 1.22-1.25x, the AVX2 path 1.05-1.25x
//    (bench_cpu_winograd_up); not at 8x8 (4 tiles: 0.72x).
//  - the tap GEMM from 32 input channels and 1024 output pixels: on small maps its per-call
//    weight packing (taps x the 1x1's) outweighs the faster tile (12x16 3x3 512 -> 512 ran 10 %
//    slower than the implicit GEMM, 24x32 equal, 48x64 and 96x128 stride 2 7-8 % faster).
#include "kernels/cpu/conv_select.h"

#include <optional>

#include "engine/core/error.h"
#include "kernels/cpu/modconv_rgb.h"
#include "kernels/cpu/winograd.h"
#include "kernels/cpu/winograd_s2.h"

namespace gpen::cpu {

namespace wd = winograd_detail;

namespace {

// A row's test: nullopt where the row does not hold, else the tile (0 for a path without one).
using Test = std::optional<int> (*)(const ConvCase&, const CpuOptions&);

struct Row {
  bool modconv;      // which op the row is for
  ConvPath path;     // what runs where the row holds
  bool formed;       // the path's fused twin runs where the form rule says (winograd_form, winograd_up_form)
  const char* tile;  // the tile, in words
  const char* when;  // the test, in words
  Test test;
};

constexpr std::optional<int> kNo = std::nullopt;
constexpr std::optional<int> kYes = 0;

int forced_tile(const CpuOptions& o) {
  return o.conv == ConvMode::winograd4 ? 4 : o.conv == ConvMode::winograd2 ? 2 : 0;
}
bool automatic(const CpuOptions& o) { return o.conv == ConvMode::automatic; }
int64_t tiles_per_image(int m, int64_t H, int64_t W) { return ((H + m - 1) / m) * ((W + m - 1) / m); }

// ---- conv2d
bool ranks4(const ConvCase& c) { return c.x.rank == 4 && c.y.rank == 4; }

// 3x3, stride 1, one group, a whole op, "same" (pad 1 all round) or "valid" on an input padded by
// one beforehand (pad 0: ParseNet's reflection pad).
bool wino_s1_shape(const ConvCase& c) {
  const Conv2dParams& p = *c.conv;
  if (p.kh != 3 || p.kw != 3 || p.stride_h != 1 || p.stride_w != 1 || p.groups != 1 || p.split_rows > 0) return false;
  const int pad = p.pad_top;
  if (pad > 1 || p.pad_left != pad || p.pad_bottom != pad || p.pad_right != pad || !ranks4(c)) return false;
  return c.x[1] == c.y[1] + 2 - 2 * pad && c.x[2] == c.y[2] + 2 - 2 * pad;
}
// conv2d's direct path needs no copy of its weight, so its transformed-weight groups stay within
// kConvUBudgetFloats, in groups of at least kConvMinGroup channels.
bool wino_s1_fits(const ConvCase& c, int m) {
  const wd::WinoPlan pl = wd::make_wino_plan(m, c.y[0], c.y[1], c.y[2], c.x[3], c.y[3], 1, wd::kConvUBudgetFloats);
  return pl.u_floats <= wd::kConvUBudgetFloats && (pl.group_co >= wd::kConvMinGroup || pl.ngroup == 1);
}

// 3x3, stride 2, one group, a whole op, pad 0 (GPEN, on the blurred map) or 1 (R50) top and left
// (the bottom and right pads only say how many outputs there are).
bool wino_s2_shape(const ConvCase& c) {
  const Conv2dParams& p = *c.conv;
  if (p.kh != 3 || p.kw != 3 || p.stride_h != 2 || p.stride_w != 2 || p.groups != 1 || p.split_rows > 0) return false;
  const int pad = p.pad_top;
  if (pad > 1 || p.pad_left != pad || !ranks4(c)) return false;
  const Shape &x = c.x, &y = c.y;
  return y[0] >= 1 && y[1] >= 1 && y[2] >= 1 && y[3] >= 1 && x[3] >= 1 && 2 * y[1] - pad <= x[1] + 1 &&
         2 * y[2] - pad <= x[2] + 1;
}
bool wino_s2_fits(const ConvCase& c, int m) {
  const wd::WinoPlan pl = wd::make_wino_s2_plan(m, c.y[0], c.y[1], c.y[2], c.x[3], c.y[3], 1);
  return pl.u_floats <= wd::kConvUBudgetFloats && (pl.group_co >= wd::kConvMinGroup || pl.ngroup == 1);
}
std::optional<int> s2_auto(const ConvCase& c, const CpuOptions& o, int64_t cmin, int64_t cmax, int64_t min_px) {
  const int64_t C = c.x[3];
  if (!automatic(o) || !wino_s2_shape(c) || C < cmin || C > cmax || c.y[3] < 16) return kNo;
  return c.y[1] >= min_px && c.y[2] >= min_px && wino_s2_fits(c, 2) ? std::optional<int>(2) : kNo;
}

bool depthwise_shape(const ConvCase& c) {
  return ranks4(c) && c.conv->groups == c.x[3] && c.conv->groups == c.y[3];
}
bool own_gemm_views(const ConvCase& c, const CpuOptions& o) {
  return o.own_gemm && c.conv->groups == 1 && ranks4(c) && c.x_unit && c.w_unit && c.out_unit;
}
bool unpadded_1x1(const Conv2dParams& p) {
  return p.kh == 1 && p.kw == 1 && !(p.pad_top || p.pad_left || p.pad_bottom || p.pad_right);
}

// ---- modconv
bool mod_s1_shape(const ConvCase& c) {
  const ModConvParams& p = *c.mod;
  return p.k == 3 && !p.up && p.split_rows == 0 && !p.cropped() && ranks4(c);
}
bool mod_up_shape(const ConvCase& c) {
  const ModConvParams& p = *c.mod;
  return p.k == 3 && p.up && p.split_rows == 0 && !p.cropped() && ranks4(c);
}
bool mod_fusable_rich(const ConvCase& c, const CpuOptions& o, int64_t min_px) {
  const int64_t H = c.x[1], W = c.x[2];
  return automatic(o) && mod_s1_shape(c) && o.wino_fused && tiles_per_image(4, H, W) <= wd::kFusedMaxTiles &&
         c.x[3] >= 256 && c.y[3] >= 128 && H >= min_px && W >= min_px;
}

// The table. Each row's words say what its test checks; conv_rule_text prints them.
const Row kRows[] = {
    // ---- conv2d
    {false, ConvPath::winograd, false, "F(m)",
     "GPEN_CPU_CONV=winograd4|winograd2 (m = 4|2): 3x3, stride 1, pad 1 all round (or 0 on an input padded "
     "beforehand), one group, a whole op (not a band); the transformed weight within 5 MiB in groups of >= 64 "
     "channels",
     [](const ConvCase& c, const CpuOptions& o) {
       const int m = forced_tile(o);
       return m && wino_s1_shape(c) && wino_s1_fits(c, m) ? std::optional<int>(m) : kNo;
     }},
    {false, ConvPath::winograd, false, "F(4)", "auto: the same shapes and weight bound, "
     "from 24x24 outputs with C >= 32 and Co >= 32",
     [](const ConvCase& c, const CpuOptions& o) {
       const bool big = c.y[1] >= 24 && c.y[2] >= 24 && c.x[3] >= 32 && c.y[3] >= 32;
       return automatic(o) && wino_s1_shape(c) && big && wino_s1_fits(c, 4) ? std::optional<int>(4) : kNo;
     }},
    {false, ConvPath::winograd_s2, false, "F(m)",
     "GPEN_CPU_CONV=winograd4|winograd2 (m = 4|2): 3x3, stride 2, pad 0 or 1 top and left, one group, a whole op; "
     "the transformed weight within 5 MiB in groups of >= 64 channels (m = 4 falls back to 2 where only that fits)",
     [](const ConvCase& c, const CpuOptions& o) {
       int m = forced_tile(o);
       if (!m || !wino_s2_shape(c)) return kNo;
       if (m == 4 && !wino_s2_fits(c, 4)) m = 2;
       return wino_s2_fits(c, m) ? std::optional<int>(m) : kNo;
     }},
    {false, ConvPath::winograd_s2, false, "F(4)", "auto: the same shapes and weight bound, "
     "32 <= C <= 64, Co >= 16, from 256x256 outputs",
     [](const ConvCase& c, const CpuOptions& o) {
       const int64_t C = c.x[3];
       const bool fit = C >= 32 && C <= 64 && c.y[3] >= 16 && c.y[1] >= 256 && c.y[2] >= 256;
       return automatic(o) && wino_s2_shape(c) && fit && wino_s2_fits(c, 4) ? std::optional<int>(4) : kNo;
     }},
    {false, ConvPath::winograd_s2, false, "F(2)", "auto: the same shapes and weight bound, "
     "16 <= C <= 64, Co >= 16, from 64x64 outputs",
     [](const ConvCase& c, const CpuOptions& o) { return s2_auto(c, o, 16, 64, 64); }},
    {false, ConvPath::winograd_s2, false, "F(2)", "auto: the same shapes and weight bound, "
     "65 <= C <= 512, Co >= 16, from 32x32 outputs",
     [](const ConvCase& c, const CpuOptions& o) { return s2_auto(c, o, 65, 512, 32); }},
    {false, ConvPath::winograd_s2, false, "F(2)",
     "auto, AVX-512 path: the same shapes and weight bound, 129 <= C <= 256, Co >= 16, from 16x16 outputs",
     [](const ConvCase& c, const CpuOptions& o) { return o.isa == Isa::avx512 ? s2_auto(c, o, 129, 256, 16) : kNo; }},
    {false, ConvPath::depthwise, false, "", "one input and one output channel per group, 3x3, unit channel strides",
     [](const ConvCase& c, const CpuOptions&) {
       const Conv2dParams& p = *c.conv;
       return depthwise_shape(c) && p.kh == 3 && p.kw == 3 && c.x_unit && c.w_unit ? kYes : kNo;
     }},
    {false, ConvPath::depthwise_any, false, "", "one input and one output channel per group",
     [](const ConvCase& c, const CpuOptions&) { return depthwise_shape(c) ? kYes : kNo; }},
    {false, ConvPath::direct, false, "",
     "one group, Co <= 32 or C <= 4, the packed weight (kh kw C x Co rounded up to 8) within 64 Ki floats",
     [](const ConvCase& c, const CpuOptions&) {
       const int64_t C = c.x[3], Co = c.y[3], K = int64_t{c.conv->kh} * c.conv->kw * C;
       const bool thin = (Co <= 32 || C <= 4) && K * ((Co + 7) / 8 * 8) <= (int64_t{1} << 16);
       return c.conv->groups == 1 && ranks4(c) && C >= 1 && Co >= 1 && thin ? kYes : kNo;
     }},
    {false, ConvPath::gemm1x1, false, "",
     "GPEN_CPU_CONV1X1=own: 1x1 without padding, one group, unit channel strides",
     [](const ConvCase& c, const CpuOptions& o) {
       return own_gemm_views(c, o) && unpadded_1x1(*c.conv) ? kYes : kNo;
     }},
    {false, ConvPath::gemm_taps, false, "",
     "GPEN_CPU_CONV1X1=own: any other kernel, one group, C >= 32, >= 1024 output pixels (of the whole op for a "
     "band), unit channel strides",
     [](const ConvCase& c, const CpuOptions& o) {
       const int64_t rows = c.conv->split_rows > 0 ? c.conv->split_rows : c.y[1];
       return own_gemm_views(c, o) && c.x[3] >= 32 && c.y[0] * rows * c.y[2] >= 1024 ? kYes : kNo;
     }},
    {false, ConvPath::gemm, false, "", "every other conv2d",
     [](const ConvCase&, const CpuOptions&) { return kYes; }},

    // ---- modconv
    {true, ConvPath::winograd, true, "F(m)",
     "GPEN_CPU_CONV=winograd4|winograd2 (m = 4|2): 3x3, not transposed, a whole op (not a band, no row pads)",
     [](const ConvCase& c, const CpuOptions& o) {
       const int m = forced_tile(o);
       return m && mod_s1_shape(c) ? std::optional<int>(m) : kNo;
     }},
    {true, ConvPath::winograd, true, "F(4)", "auto: the same shapes from 48x48 with C >= 32 and Co >= 32",
     [](const ConvCase& c, const CpuOptions& o) {
       const bool big = c.x[1] >= 48 && c.x[2] >= 48 && c.x[3] >= 32 && c.y[3] >= 32;
       return automatic(o) && mod_s1_shape(c) && big ? std::optional<int>(4) : kNo;
     }},
    {true, ConvPath::winograd, true, "F(4)",
     "auto: the same shapes from 32x32 with C >= 256, Co >= 128 and C x Co <= 512 x 256",
     [](const ConvCase& c, const CpuOptions& o) {
       const int64_t C = c.x[3], Co = c.y[3];
       const bool rich = c.x[1] >= 32 && c.x[2] >= 32 && C >= 256 && Co >= 128 && C * Co <= 512 * 256;
       return automatic(o) && mod_s1_shape(c) && rich ? std::optional<int>(4) : kNo;
     }},
    {true, ConvPath::winograd, true, "F(4)",
     "auto, GPEN_CPU_WINO_FUSED=1: the same shapes with at most 96 tiles of 4x4 an image, from 16x16 with "
     "C >= 256 and Co >= 128",
     [](const ConvCase& c, const CpuOptions& o) { return mod_fusable_rich(c, o, 16) ? std::optional<int>(4) : kNo; }},
    {true, ConvPath::winograd, true, "F(4) AVX-512, F(2) AVX2", "auto, GPEN_CPU_WINO_FUSED=1: the same from 8x8",
     [](const ConvCase& c, const CpuOptions& o) {
       return mod_fusable_rich(c, o, 8) ? std::optional<int>(o.isa == Isa::avx512 ? 4 : 2) : kNo;
     }},
    {true, ConvPath::winograd_up, true, "F(m, 2)",
     "GPEN_CPU_CONV=winograd4|winograd2 (m = 4|2): transposed 3x3, a whole op (no row crop)",
     [](const ConvCase& c, const CpuOptions& o) {
       const int m = forced_tile(o);
       return m && mod_up_shape(c) ? std::optional<int>(m) : kNo;
     }},
    {true, ConvPath::winograd_up, true, "F(4, 2)", "auto: the same from 64x64 inputs with 32 <= C <= 256, Co >= 16",
     [](const ConvCase& c, const CpuOptions& o) {
       const int64_t C = c.x[3];
       const bool big = c.x[1] >= 64 && c.x[2] >= 64 && C >= 32 && C <= 256 && c.y[3] >= 16;
       return automatic(o) && mod_up_shape(c) && big ? std::optional<int>(4) : kNo;
     }},
    {true, ConvPath::winograd_up, true, "F(4, 2)",
     "auto, GPEN_CPU_WINO_FUSED=1: the same on inputs whose sides are multiples of 4 with at most 96 tiles of 4x4, "
     "from 16x16 with C >= 256, Co >= 128",
     [](const ConvCase& c, const CpuOptions& o) {
       const int64_t H = c.x[1], W = c.x[2];
       const bool fusable = o.wino_fused && H % 4 == 0 && W % 4 == 0 && (H / 4) * (W / 4) <= wd::kFusedMaxTiles;
       const bool rich = H >= 16 && W >= 16 && c.x[3] >= 256 && c.y[3] >= 128;
       return automatic(o) && mod_up_shape(c) && fusable && rich ? std::optional<int>(4) : kNo;
     }},
    {true, ConvPath::to_rgb, false, "", "1x1, not transposed, 1..4 output channels, x and x2 of unit channel stride",
     [](const ConvCase& c, const CpuOptions&) {
       const ModConvParams& p = *c.mod;
       const bool rgb = p.k == 1 && !p.up && !p.cropped() && c.y[3] >= 1 && c.y[3] <= modconv_rgb::kMaxCo;
       return rgb && c.x_unit ? kYes : kNo;
     }},
    {true, ConvPath::modconv_direct, false, "", "every other modconv",
     [](const ConvCase&, const CpuOptions&) { return kYes; }},
};

bool unit(const TensorView* v, int axis) { return !v || v->dim(axis) <= 1 || v->stride(axis) == 1; }

}  // namespace

const char* conv_mode_name(ConvMode m) {
  switch (m) {
    case ConvMode::automatic: return "auto";
    case ConvMode::direct: return "direct";
    case ConvMode::winograd4: return "winograd4";
    case ConvMode::winograd2: return "winograd2";
  }
  return "?";
}

const char* conv_path_name(ConvPath p) {
  switch (p) {
    case ConvPath::winograd: return "winograd";
    case ConvPath::winograd_s2: return "winograd_s2";
    case ConvPath::depthwise: return "depthwise";
    case ConvPath::depthwise_any: return "depthwise_any";
    case ConvPath::direct: return "direct";
    case ConvPath::gemm1x1: return "gemm1x1";
    case ConvPath::gemm_taps: return "gemm_taps";
    case ConvPath::gemm: return "gemm";
    case ConvPath::winograd_fused: return "winograd_fused";
    case ConvPath::winograd_up: return "winograd_up";
    case ConvPath::winograd_up_fused: return "winograd_up_fused";
    case ConvPath::to_rgb: return "to_rgb";
    case ConvPath::modconv_direct: return "modconv_direct";
  }
  return "?";
}

std::string conv_choice_label(const ConvChoice& c) {
  std::string s = conv_path_name(c.path);
  if (c.tile) s += " F(" + std::to_string(c.tile) + ")";
  if (c.weight_tiles) s += " (weight tiles)";
  return s;
}

ConvCase conv2d_case(const Conv2dParams& p, const Shape& x, const Shape& y) {
  ConvCase c;
  c.conv = &p, c.x = x, c.y = y;
  return c;
}

ConvCase modconv_case(const ModConvParams& p, const Shape& x_cat, const Shape& y) {
  ConvCase c;
  c.mod = &p, c.x = x_cat, c.y = y;
  return c;
}

ConvCase conv2d_case(const Conv2dParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
                     const TensorView* residual, const TensorView& y) {
  ConvCase c = conv2d_case(p, x.shape, y.shape);
  c.x_unit = x.rank() == 4 && unit(&x, 3);
  c.w_unit = w.rank() == 4 && unit(&w, 3);
  c.out_unit = y.rank() == 4 && unit(&y, 3) && unit(bias, 0) && (!residual || (residual->rank() == 4 && unit(residual, 3)));
  return c;
}

ConvCase modconv_case(const ModConvParams& p, const ModConvArgs& a, const TensorView& y) {
  Shape x = a.x->shape;
  if (x.rank == 4 && a.w && a.w->rank() == 4) x[3] = a.w->dim(2);  // the concatenated input channels
  ConvCase c = modconv_case(p, x, y.shape);
  c.x_unit = a.x->rank() == 4 && unit(a.x, 3) && (!a.x2 || (a.x2->rank() == 4 && unit(a.x2, 3)));
  return c;
}

ConvChoice winograd_form(int m, int64_t H, int64_t W, const CpuOptions& o) {
  const bool fused = o.wino_fused && tiles_per_image(m, H, W) <= wd::kFusedMaxTiles;
  return {fused ? ConvPath::winograd_fused : ConvPath::winograd, m};
}

ConvChoice winograd_up_form(int m, int64_t N, int64_t H, int64_t W, int64_t C, int64_t Co, const CpuOptions& o) {
  const bool exact = N >= 1 && H >= 4 && W >= 4 && H % 4 == 0 && W % 4 == 0 && C >= 1 && Co >= 1;
  const bool fused = m == 4 && o.wino_fused && exact && (H / 4) * (W / 4) <= wd::kFusedMaxTiles;
  return {fused ? ConvPath::winograd_up_fused : ConvPath::winograd_up, m};
}

ConvChoice choose_conv(const ConvCase& c, const CpuOptions& o) {
  GPEN_CHECK((c.conv != nullptr) != (c.mod != nullptr), "choose_conv: a conv2d or a modconv");
  if (o.low_memory) {
    // The table as under GPEN_CPU_CONV=direct (no Winograd); a modconv reads its weight per tile
    // (conv2d's paths pack at most kPackFloats / kWeightCacheFloats of it at a time already).
    CpuOptions d = o;
    d.conv = ConvMode::direct;
    d.low_memory = false;
    ConvChoice ch = choose_conv(c, d);
    ch.weight_tiles = c.mod != nullptr;
    return ch;
  }
  for (const Row& r : kRows) {
    if (r.modconv != (c.mod != nullptr)) continue;
    const std::optional<int> tile = r.test(c, o);
    if (!tile) continue;
    if (!r.formed) return {r.path, *tile};
    if (r.path == ConvPath::winograd) return winograd_form(*tile, c.x[1], c.x[2], o);
    return winograd_up_form(*tile, c.y[0], c.x[1], c.x[2], c.x[3], c.y[3], o);
  }
  throw Error("choose_conv: no row holds");  // the last row of each op always does
}

std::string conv_rule_text() {
  std::string s;
  int n = 0;
  for (int op = 0; op < 2; ++op) {
    s += op == 0 ? "conv2d, tried in order (the first row that holds runs):\n"
                 : "\nmodconv, tried in order (the first row that holds runs):\n";
    n = 0;
    for (const Row& r : kRows) {
      if (r.modconv != (op == 1)) continue;
      std::string path = conv_path_name(r.path);
      if (r.formed) path += "[_fused]";
      if (*r.tile) path += std::string(" ") + r.tile;
      s += std::to_string(++n) + ". " + path + ": " + r.when + "\n";
    }
  }
  s += "\n[_fused]: a stride-1 modconv's Winograd runs fused (winograd_fused) where one image has at most 96 tiles of "
       "m x m and GPEN_CPU_WINO_FUSED is not 0; a transposed one's F(4, 2) (winograd_up_fused) where the input's "
       "sides are multiples of 4 with at most 96 tiles of 4x4 and GPEN_CPU_WINO_FUSED is not 0; else grouped.\n";
  return s;
}

}  // namespace gpen::cpu
