#include "kernels/cpu/detect_post.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/core/error.h"

// PyTorch decodes with one rounding per elementwise op; a fused multiply-add (GCC contracts them
// under -mfma) would round once and move coordinates by an ulp.
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

namespace gpen {

namespace {

constexpr int kSteps[3] = {8, 16, 32};
constexpr int kMinSizes[3][2] = {{16, 32}, {64, 128}, {256, 512}};
// The variances as float32: torch multiplies a float32 tensor by a Python float in float32.
constexpr float kVar0 = 0.1f, kVar1 = 0.2f;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

void check_size(int h, int w) {
  GPEN_CHECK(h > 0 && w > 0 && h <= (1 << 16) && w <= (1 << 16),
             "RetinaFace input size " + std::to_string(w) + "x" + std::to_string(h) + " is out of range");
}

}  // namespace

size_t retinaface_prior_count(int h, int w) {
  check_size(h, w);
  size_t n = 0;
  for (int s : kSteps) n += static_cast<size_t>(ceil_div(h, s) * ceil_div(w, s) * 2);
  return n;
}

std::vector<Prior> retinaface_priors(int h, int w) {
  std::vector<Prior> out;
  out.reserve(retinaface_prior_count(h, w));
  for (int l = 0; l < 3; ++l) {
    const int s = kSteps[l];
    const int64_t fh = ceil_div(h, s), fw = ceil_div(w, s);
    for (int64_t i = 0; i < fh; ++i)
      for (int64_t j = 0; j < fw; ++j)
        for (int m : kMinSizes[l])
          out.push_back({static_cast<float>((static_cast<double>(j) + 0.5) * s / w),
                         static_cast<float>((static_cast<double>(i) + 0.5) * s / h),
                         static_cast<float>(static_cast<double>(m) / w),
                         static_cast<float>(static_cast<double>(m) / h)});
  }
  return out;
}

// Same operation order as the official decode(): centre, size, x1 = c - size/2, x2 = x1 + size,
// then scaled to pixels.
void decode_boxes(const float* loc, const std::vector<Prior>& pri, int h, int w, float* boxes) {
  const float fw = static_cast<float>(w), fh = static_cast<float>(h);
  for (size_t i = 0; i < pri.size(); ++i) {
    const Prior& p = pri[i];
    const float* l = loc + i * 4;
    const float cx = p.cx + l[0] * kVar0 * p.sx, cy = p.cy + l[1] * kVar0 * p.sy;
    const float sx = p.sx * std::exp(l[2] * kVar1), sy = p.sy * std::exp(l[3] * kVar1);
    const float x1 = cx - sx / 2, y1 = cy - sy / 2;
    float* b = boxes + i * 4;
    b[0] = x1 * fw;
    b[1] = y1 * fh;
    b[2] = (sx + x1) * fw;
    b[3] = (sy + y1) * fh;
  }
}

void decode_landmarks(const float* landms, const std::vector<Prior>& pri, int h, int w, float* out) {
  const float fw = static_cast<float>(w), fh = static_cast<float>(h);
  for (size_t i = 0; i < pri.size(); ++i) {
    const Prior& p = pri[i];
    const float* l = landms + i * 10;
    float* o = out + i * 10;
    for (int j = 0; j < 5; ++j) {
      o[2 * j] = (p.cx + l[2 * j] * kVar0 * p.sx) * fw;
      o[2 * j + 1] = (p.cy + l[2 * j + 1] * kVar0 * p.sy) * fh;
    }
  }
}

std::vector<int> nms_plus1(const float* b, size_t n, float thr) {
  std::vector<float> area(n);
  for (size_t i = 0; i < n; ++i) area[i] = (b[4 * i + 2] - b[4 * i] + 1) * (b[4 * i + 3] - b[4 * i + 1] + 1);
  std::vector<char> removed(n, 0);
  std::vector<int> keep;
  for (size_t i = 0; i < n; ++i) {
    if (removed[i]) continue;
    keep.push_back(static_cast<int>(i));
    const float* bi = b + 4 * i;
    for (size_t j = i + 1; j < n; ++j) {
      if (removed[j]) continue;
      const float* bj = b + 4 * j;
      const float iw = std::max(0.0f, std::min(bi[2], bj[2]) - std::max(bi[0], bj[0]) + 1);
      const float ih = std::max(0.0f, std::min(bi[3], bj[3]) - std::max(bi[1], bj[1]) + 1);
      const float inter = iw * ih;
      const float ovr = inter / (area[i] + area[j] - inter);
      // py_cpu_nms keeps ovr <= thresh; a NaN overlap (degenerate boxes) removes, as NumPy does.
      if (!(ovr <= thr)) removed[j] = 1;
    }
  }
  return keep;
}

std::vector<Face> retinaface_postprocess(const float* loc, const float* conf, const float* landms, int h, int w,
                                         const DetectParams& p, float scale) {
  GPEN_CHECK(scale > 0 && std::isfinite(scale), "detection scale must be positive");
  GPEN_CHECK(p.top_k >= 0 && p.keep_top_k >= 0, "top-k limits must be non-negative");
  const std::vector<Prior> pri = retinaface_priors(h, w);
  // Only candidates above the threshold are decoded: the rest never reach the output.
  std::vector<int> idx;
  for (size_t i = 0; i < pri.size(); ++i)
    if (conf[2 * i + 1] > p.threshold) idx.push_back(static_cast<int>(i));
  // NumPy's argsort()[::-1]: descending score; among equal scores the later index first.
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) {
    const float sa = conf[2 * a + 1], sb = conf[2 * b + 1];
    return sa != sb ? sa > sb : a > b;
  });
  if (idx.size() > static_cast<size_t>(p.top_k)) idx.resize(static_cast<size_t>(p.top_k));

  std::vector<Prior> sel(idx.size());
  std::vector<float> l(idx.size() * 4), lm(idx.size() * 10);
  for (size_t k = 0; k < idx.size(); ++k) {
    sel[k] = pri[static_cast<size_t>(idx[k])];
    std::copy_n(loc + static_cast<size_t>(idx[k]) * 4, 4, l.begin() + static_cast<std::ptrdiff_t>(k * 4));
    std::copy_n(landms + static_cast<size_t>(idx[k]) * 10, 10, lm.begin() + static_cast<std::ptrdiff_t>(k * 10));
  }
  std::vector<float> boxes(idx.size() * 4), lms(idx.size() * 10);
  decode_boxes(l.data(), sel, h, w, boxes.data());
  decode_landmarks(lm.data(), sel, h, w, lms.data());

  std::vector<int> keep = nms_plus1(boxes.data(), idx.size(), p.nms);
  if (keep.size() > static_cast<size_t>(p.keep_top_k)) keep.resize(static_cast<size_t>(p.keep_top_k));
  std::vector<Face> faces;
  faces.reserve(keep.size());
  for (int k : keep) {
    Face f;
    for (int j = 0; j < 4; ++j) f.box[j] = boxes[static_cast<size_t>(k) * 4 + j] / scale;
    for (int j = 0; j < 10; ++j) f.landmarks[j] = lms[static_cast<size_t>(k) * 10 + j] / scale;
    f.score = conf[2 * static_cast<size_t>(idx[static_cast<size_t>(k)]) + 1];
    faces.push_back(f);
  }
  return faces;
}

}  // namespace gpen
