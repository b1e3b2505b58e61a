#include "engine/plan/banding_rows.h"

namespace gpen::banding_detail {

namespace {

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }
Range clip(int64_t a, int64_t b, int64_t h) { return {std::max<int64_t>(0, a), std::min<int64_t>(h, b)}; }

// The lower source row of output row y of a bilinear resize from h to out_h rows, in the float
// arithmetic of the kernels (kernels/cpu/resize_bilinear.cpp).
int64_t bilinear_source_row(int64_t y, int64_t h, int64_t out_h) {
  const float scale = static_cast<float>(h) / static_cast<float>(out_h);
  const float src = std::max(scale * (static_cast<float>(y) + 0.5f) - 0.5f, 0.0f);
  return std::min(static_cast<int64_t>(src), h - 1);
}

}  // namespace

std::vector<SpatialInput> spatial_inputs(const Node& n) {
  if (std::holds_alternative<ModConvParams>(n.params)) return {{0, false}, {1, false}, {8, true}};
  if (std::holds_alternative<Conv2dParams>(n.params)) return {{0, false}, {3, true}};
  if (std::holds_alternative<UpFirDn2dParams>(n.params)) return {{0, false}};
  if (std::holds_alternative<ResizeBilinearParams>(n.params)) return {{0, false}};
  // Elementwise, row for row: GFPGAN's skip add, SFT (x, scale, shift) and StyleConv epilogue
  // (its noise map, a weight, stays whole: the band reads it from its first row, noise_row0).
  if (std::holds_alternative<AddParams>(n.params)) return {{0, false}, {1, false}};
  if (std::holds_alternative<SftParams>(n.params)) return {{0, false}, {1, false}, {2, false}};
  if (std::holds_alternative<NoiseBiasActParams>(n.params)) return {{0, false}};
  return {};
}

bool bandable(const Node& n) { return !spatial_inputs(n).empty(); }

OpBand map_rows(const Node& n, int64_t H, Range o) {
  OpBand r;
  r.params = n.params;
  if (auto* c = std::get_if<Conv2dParams>(&n.params)) {
    // Full output row y reads input rows y * s - pad_top + [0, kh): the band reads exactly those,
    // and pads only where they fall outside the image, as the full op does.
    const int64_t lo = o.a * c->stride_h - c->pad_top, hi = (o.b - 1) * c->stride_h - c->pad_top + c->kh;
    r.in = clip(lo, hi, H);
    Conv2dParams q = *c;
    q.pad_top = static_cast<int>(std::max<int64_t>(0, -lo));
    q.pad_bottom = static_cast<int>(std::max<int64_t>(0, hi - H));
    r.params = q;
    r.computed = o;
  } else if (auto* u = std::get_if<UpFirDn2dParams>(&n.params)) {
    // Output row y takes taps at upsampled positions y * down - pad0 + [0, kh); input row i sits
    // at i * up. The band's pad0 shifts its own positions onto the full op's (negative crops).
    const int64_t up = u->up_y, dn = u->down_y;
    const int64_t lo = o.a * dn - u->pad_y0, hi = (o.b - 1) * dn - u->pad_y0 + u->kh - 1;
    r.in = clip(ceil_div(lo, up), floor_div(hi, up) + 1, H);
    if (r.in.empty()) r.in = clip(std::min(ceil_div(lo, up), H - 1), std::min(ceil_div(lo, up), H - 1) + 1, H);
    UpFirDn2dParams q = *u;
    const int64_t pad0 = u->pad_y0 + r.in.a * up - o.a * dn;
    const int64_t pad1 = (o.rows() - 1) * dn + u->kh - pad0 - r.in.rows() * up;
    q.pad_y0 = static_cast<int>(pad0);
    q.pad_y1 = static_cast<int>(pad1);
    r.params = q;
    r.computed = o;
  } else if (auto* m = std::get_if<ModConvParams>(&n.params)) {
    const int64_t k = m->k;
    if (m->up) {
      // Transposed, stride 2, no padding: output row Y gathers input rows (Y - ky) / 2, ky < k.
      // The band reads every input row its rows gather from and crops (ModConvParams::crop_top /
      // crop_bottom) the rows of its own whole output, 2 in.a + [0, 2 (in.rows - 1) + k), to
      // exactly o. (k = 1 only: a row without taps may need one more input row so that the crop
      // stays non-negative; its value, zero, does not depend on it.)
      const int64_t lo = std::min(ceil_div(o.a - (k - 1), 2), floor_div(o.a, 2));
      const int64_t hi = std::max(floor_div(o.b - 1, 2), ceil_div(o.b - k, 2)) + 1;
      r.in = clip(lo, hi, H);
      ModConvParams q = *m;
      q.crop_top = static_cast<int>(o.a - 2 * r.in.a);
      q.crop_bottom = static_cast<int>(2 * (r.in.b - 1) + k - o.b);
      GPEN_CHECK(q.crop_top >= 0 && q.crop_bottom >= 0 && m->crop_top == 0 && m->crop_bottom == 0,
                 "banding: " + n.name + " cannot crop rows [" + std::to_string(o.a) + ", " + std::to_string(o.b) + ")");
      r.params = q;
      r.computed = o;
    } else {
      // As conv2d: output row y reads input rows y - top + [0, k); the band pads (its own
      // pad_top / pad_bottom, ModConvParams) only where those fall outside the image, so it
      // computes exactly the rows asked for.
      const int64_t lo = o.a - m->top(), hi = o.b - 1 - m->top() + k;
      r.in = clip(lo, hi, H);
      ModConvParams q = *m;
      q.pad_top = static_cast<int>(std::max<int64_t>(0, -lo));
      q.pad_bottom = static_cast<int>(std::max<int64_t>(0, hi - H));
      r.params = q;
      r.computed = o;
    }
    r.exact = r.computed == o;
  } else if (auto* z = std::get_if<ResizeBilinearParams>(&n.params)) {
    // Output row y blends input rows i0(y) and i1(y) <= i0(y) + 1, both rising with y: the band
    // reads [i0(o.a), i1(o.b - 1)] and computes the global rows o with the whole op's taps.
    GPEN_CHECK(z->in_h == 0, "banding: " + n.name + " is already a band");
    auto first = [&](int64_t y) { return bilinear_source_row(y, H, z->out_h); };
    r.in = {first(o.a), std::min(first(o.b - 1) + 1, H - 1) + 1};
    ResizeBilinearParams q = *z;
    q.in_h = static_cast<int>(H);
    q.in_row0 = static_cast<int>(r.in.a);
    q.out_row0 = static_cast<int>(o.a);
    r.params = q;
    r.computed = o;
  } else if (std::holds_alternative<AddParams>(n.params) || std::holds_alternative<SftParams>(n.params)) {
    r.in = o;
    r.computed = o;
  } else if (auto* e = std::get_if<NoiseBiasActParams>(&n.params)) {
    GPEN_CHECK(e->noise_row0 == 0, "banding: " + n.name + " is already a band");
    NoiseBiasActParams q = *e;
    q.noise_row0 = static_cast<int>(o.a);
    r.params = q;
    r.in = o;
    r.computed = o;
  } else {
    GPEN_CHECK(false, "banding: op " + n.name + " (" + op_name(n.params) + ") cannot run in bands");
  }
  GPEN_CHECK(r.computed.contains(o), "banding: op " + n.name + " does not cover the rows a band needs");
  return r;
}

}  // namespace gpen::banding_detail
