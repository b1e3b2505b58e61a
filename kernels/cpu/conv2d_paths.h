#pragma once
// Internal to conv2d (kernels/cpu/conv2d*.cpp): the specialised paths that conv2d.cpp dispatches
// to, and the 8-float activation they share (the vectors themselves: simd8.h). Each path computes exactly the conv2d contract
// of kernels/cpu/ops.h (bias, activation, then residual, through the output's strides).
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "engine/core/tensor.h"
#include "kernels/cpu/simd8.h"
#include "kernels/params.h"

namespace gpen::cpu::detail {

// act_branchless (kernels/cpu/strided.h) on eight lanes, with the same std::max / std::min
// semantics (a NaN passes through as in the scalar code).
inline v8f act8(v8f v, v8f slope, v8f gain) {
  const v8f zero = {};
  const v8f pos = v < zero ? zero : v;
  const v8f neg = zero < v ? zero : v;
  return gain * (pos + slope * neg);
}

// Where the output of a conv (and its optional residual, which may be the output itself) lives.
struct ConvOut {
  float* y = nullptr;
  int64_t ys0 = 0, ys1 = 0, ys2 = 0, ys3 = 1;
  const float* res = nullptr;
  int64_t rs0 = 0, rs1 = 0, rs2 = 0, rs3 = 1;
  float slope = 1.0f, gain = 1.0f;
};

inline ConvOut conv_out(const TensorView& y, const TensorView* residual, const Activation& act) {
  ConvOut o;
  o.y = y.f32();
  o.ys0 = y.stride(0), o.ys1 = y.stride(1), o.ys2 = y.stride(2), o.ys3 = y.stride(3);
  if (residual) {
    o.res = residual->f32();
    o.rs0 = residual->stride(0), o.rs1 = residual->stride(1), o.rs2 = residual->stride(2);
    o.rs3 = residual->stride(3);
  }
  o.slope = act.slope, o.gain = act.gain;
  return o;
}

// act(acc + bias) + residual for channels [c, c + nc) (nc <= 8) of output pixel (n, oy, ox);
// bias8 holds the bias of those channels (zeros when has_bias is false, then not added, so the
// sum is the same as the generic path's to the bit).
inline void finish8(const ConvOut& o, v8f acc, bool has_bias, v8f bias8, int64_t n, int64_t oy, int64_t ox,
                    int64_t c, int nc) {
  if (has_bias) acc += bias8;
  acc = act8(acc, splat8(o.slope), splat8(o.gain));
  float* yp = o.y + n * o.ys0 + oy * o.ys1 + ox * o.ys2 + c * o.ys3;
  const float* rp = o.res ? o.res + n * o.rs0 + oy * o.rs1 + ox * o.rs2 + c * o.rs3 : nullptr;
  if (nc == 8 && o.ys3 == 1 && (!rp || o.rs3 == 1)) {
    if (rp) acc += load8(rp);  // read before the store: the residual may be the output
    store8(yp, acc);
    return;
  }
  float t[8];
  store8(t, acc);
  for (int j = 0; j < nc; ++j) yp[j * o.ys3] = rp ? t[j] + rp[j * o.rs3] : t[j];
}

// ---- depthwise 3x3 (kernels/cpu/conv2d_depthwise.cpp)
// Depthwise (groups == C == Cout) 3x3 conv, any strides and paddings, vectorised across
// channels. Needs unit channel stride in x and w (any pixel strides); returns false, doing
// nothing, when it does not apply, so the caller runs its generic path. No workspace.
bool depthwise3x3(const Conv2dParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
                  const TensorView* residual, const TensorView& y);

// ---- direct conv for few output channels or few input channels (kernels/cpu/conv2d_direct.cpp)
// Where it runs: conv_select.h (one group, few output or input channels, a small packed weight).
// Floats of workspace the direct path needs (packed weights and bias), before alignment.
size_t direct_conv_workspace_floats(int64_t depth, int64_t cout);
// Any strides; `ws` 64-byte aligned, direct_conv_workspace_floats floats.
void direct_conv(const Conv2dParams& p, const TensorView& x, const TensorView& w, const TensorView* bias,
                 const TensorView* residual, const TensorView& y, float* ws);

// ---- the generic paths: implicit-im2col GEMM (kernels/cpu/conv2d_gemm.cpp), other depthwise
// (kernels/cpu/conv2d_depthwise_any.cpp), their epilogue (kernels/cpu/conv2d_epilogue.cpp), and
// the geometry and plan conv2d.cpp derives for them from the shapes.
struct Geom {
  int64_t N = 0, H = 0, W = 0, C = 0, Ho = 0, Wo = 0, Co = 0;
  int64_t G = 1, cin_g = 0, cout_g = 0, K = 0;
};

// GEMM depth per packed weight block (3x3x64): the plan's cap, and the depth of the stack block
// 8-bit weights are dequantised into (conv2d_gemm.cpp).
constexpr int64_t kMaxDepthBlock = 576;

struct Plan {
  bool depthwise = false;
  bool direct = false;  // kernels/cpu/conv2d_direct.cpp
  int64_t dw_seg = 0;  // depthwise: output pixels per item
  // GEMM path
  int64_t tile_m = 0;                    // pixels per tile
  int64_t kb = 0, nkb = 0;               // depth block, number of depth blocks
  int64_t nb = 0, nib = 0;               // channel block, blocks per group
  int64_t item_blocks = 0;               // channel blocks per work item (by default)
  size_t slot_floats = 0;                // one packed weight block, rounded
  size_t cache_floats = 0;               // shared packed-weight cache (0: pack per use)
  size_t pix_floats = 0, acc_floats = 0, wblk_floats = 0;
  size_t per_thread_floats = 0;
};

struct Args {
  const Conv2dParams* p;
  Geom g;
  Plan pl;
  const TensorView* x;
  const TensorView* w;
  int64_t wld;  // element distance between rows of the weight seen as [K][cout]
  const TensorView* bias;
  const TensorView* res;
  const TensorView* y;
};

// Decomposes a flat output pixel index into (n, oy, ox) and steps through consecutive pixels.
struct PixelCursor {
  int64_t n, oy, ox, Ho, Wo;
  PixelCursor(int64_t pix, int64_t ho, int64_t wo) : Ho(ho), Wo(wo) {
    n = pix / (ho * wo);
    const int64_t r = pix % (ho * wo);
    oy = r / wo;
    ox = r % wo;
  }
  void next() {
    if (++ox == Wo) {
      ox = 0;
      if (++oy == Ho) {
        oy = 0;
        ++n;
      }
    }
  }
};

// y[pixels p0.., channels co0..co0+nc) = act(acc + bias) + residual, acc being m x nc row-major.
void epilogue(const Args& a, int64_t p0, int64_t m, int64_t co0, int64_t nc, const float* acc);
// Weight block (group grp, depth block kk, channel block ib) packed for GEBP.
void pack_weight_block(const Args& a, int64_t grp, int64_t kk, int64_t ib, float* dst);
// One work item: output pixels [p0, p0+m) x channel blocks [ib0, ib1) of group grp.
void gemm_item(const Args& a, int64_t grp, int64_t p0, int64_t m, int64_t ib0, int64_t ib1, const float* wcache,
               float* scratch);
// Output row (n, oy), pixels [ox0, ox0+len), all channels.
void depthwise_item(const Args& a, int64_t n, int64_t oy, int64_t ox0, int64_t len, float* acc);

}  // namespace gpen::cpu::detail
