// RetinaFace decode on the device: one thread per prior, grid-stride, 256 threads. A prior whose
// face score passes the threshold recomputes its (cx, cy, sx, sy) from its index (no prior table
// in memory), decodes box and landmarks as kernels/cpu/detect_post.cpp does, and appends itself to the
// candidate list through an atomic counter. Sorting, top-k and the greedy NMS run on the host
// (detect_finish) over the few candidates: NMS is sequential by nature, and copying back a few
// hundred 64-byte candidates costs less than any device-side sort of them.
#include <algorithm>
#include <string>

#include "kernels/cuda/pipeline.cuh"

GPEN_CUDA_NAMESPACE_BEGIN

namespace {

constexpr int kThreads = 256;
constexpr float kVar0 = 0.1f, kVar1 = 0.2f;

struct PriorGrid {
  int h, w;
  int64_t level_end[3];  // first prior index past each level
  int fw[3];             // cells per row of each level
};

// The prior of index i: level (steps 8, 16, 32), row, column, min size, each coordinate computed
// in double and rounded to float as PriorBox.
__device__ __forceinline__ Prior prior_at(const PriorGrid& g, int64_t i) {
  // Selects rather than indexing the parameter arrays, which would copy them to local memory.
  const int l = i >= g.level_end[1] ? 2 : (i >= g.level_end[0] ? 1 : 0);
  const int64_t start = l == 0 ? 0 : (l == 1 ? g.level_end[0] : g.level_end[1]);
  const int64_t fw = l == 0 ? g.fw[0] : (l == 1 ? g.fw[1] : g.fw[2]);
  const int64_t k = i - start, cell = k / 2;
  const int64_t row = cell / fw, col = cell - row * fw;
  // steps 8, 16, 32; min sizes {16, 32}, {64, 128}, {256, 512} (arithmetic, so no local array).
  const double s = 8 << l, m = (16 << (2 * l)) << (k & 1);
  Prior p;
  p.cx = static_cast<float>(pipe::dmul_rn(static_cast<double>(col) + 0.5, s) / g.w);
  p.cy = static_cast<float>(pipe::dmul_rn(static_cast<double>(row) + 0.5, s) / g.h);
  p.sx = static_cast<float>(m / g.w);
  p.sy = static_cast<float>(m / g.h);
  return p;
}

__global__ void __launch_bounds__(kThreads)
    detect_decode_kernel(int64_t priors, PriorGrid g, const float* loc, const float* conf, const float* landms,
                         float threshold, DetectCandidate* out, int capacity, int32_t* count) {
  using pipe::add_rn;
  using pipe::mul_rn;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < priors; i += int64_t{gridDim.x} * blockDim.x) {
    const float score = conf[2 * i + 1];
    if (!(score > threshold)) continue;
    const int slot = atomicAdd(count, 1);
    if (slot >= capacity) continue;
    const Prior p = prior_at(g, i);
    const float fw = static_cast<float>(g.w), fh = static_cast<float>(g.h);
    DetectCandidate& c = out[slot];  // written field by field: no local copy of 64 bytes
    c.prior = static_cast<int32_t>(i);
    c.score = score;
    const float* l = loc + 4 * i;
    const float cx = add_rn(p.cx, mul_rn(mul_rn(l[0], kVar0), p.sx));
    const float cy = add_rn(p.cy, mul_rn(mul_rn(l[1], kVar0), p.sy));
    const float sx = mul_rn(p.sx, expf(mul_rn(l[2], kVar1)));
    const float sy = mul_rn(p.sy, expf(mul_rn(l[3], kVar1)));
    const float x1 = add_rn(cx, -(sx / 2)), y1 = add_rn(cy, -(sy / 2));
    c.box[0] = mul_rn(x1, fw);
    c.box[1] = mul_rn(y1, fh);
    c.box[2] = mul_rn(add_rn(sx, x1), fw);
    c.box[3] = mul_rn(add_rn(sy, y1), fh);
    const float* lm = landms + 10 * i;
    for (int j = 0; j < 5; ++j) {
      c.landmarks[2 * j] = mul_rn(add_rn(p.cx, mul_rn(mul_rn(lm[2 * j], kVar0), p.sx)), fw);
      c.landmarks[2 * j + 1] = mul_rn(add_rn(p.cy, mul_rn(mul_rn(lm[2 * j + 1], kVar0), p.sy)), fh);
    }
  }
}

}  // namespace

void detect_decode(const float* loc, const float* conf, const float* landms, int h, int w, float threshold,
                   DetectCandidate* out, int capacity, int32_t* count, Stream stream) {
  const char* op = "detect_decode";
  const size_t priors = retinaface_prior_count(h, w);  // checks h, w
  GPEN_CHECK(loc != nullptr && conf != nullptr && landms != nullptr, std::string(op) + ": null head output");
  GPEN_CHECK(count != nullptr, std::string(op) + ": null candidate counter");
  GPEN_CHECK(capacity >= 0, std::string(op) + ": negative capacity");
  GPEN_CHECK(out != nullptr || capacity == 0, std::string(op) + ": null candidate list");
  PriorGrid g{};
  g.h = h;
  g.w = w;
  const int steps[3] = {8, 16, 32};
  int64_t end = 0;
  for (int l = 0; l < 3; ++l) {
    const int64_t fh = (h + steps[l] - 1) / steps[l], fw = (w + steps[l] - 1) / steps[l];
    g.fw[l] = static_cast<int>(fw);
    end += fh * fw * 2;
    g.level_end[l] = end;
  }
  const cudaError_t e = cudaMemsetAsync(count, 0, sizeof(int32_t), stream);
  if (e != cudaSuccess) throw Error(std::string("CUDA ") + op + ": clearing the counter: " + cudaGetErrorString(e));
  GPEN_LAUNCH(grid_for(static_cast<int64_t>(priors), kThreads), kThreads, 0, stream, detect_decode_kernel)(
      static_cast<int64_t>(priors), g, loc, conf, landms, threshold, out, capacity, count);
  check_launch(op);
}

std::vector<Face> detect_finish(const DetectCandidate* cand, size_t n, const DetectParams& p, float scale) {
  GPEN_CHECK(scale > 0 && std::isfinite(scale), "detect_finish: detection scale must be positive");
  GPEN_CHECK(p.top_k >= 0 && p.keep_top_k >= 0, "detect_finish: top-k limits must be non-negative");
  GPEN_CHECK(cand != nullptr || n == 0, "detect_finish: null candidates");
  // retinaface_postprocess's order: descending score, the later prior first among equal scores.
  std::vector<size_t> idx(n);
  for (size_t i = 0; i < n; ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    const DetectCandidate &ca = cand[a], &cb = cand[b];
    return ca.score != cb.score ? ca.score > cb.score : ca.prior > cb.prior;
  });
  if (idx.size() > static_cast<size_t>(p.top_k)) idx.resize(static_cast<size_t>(p.top_k));
  std::vector<float> boxes(idx.size() * 4);
  for (size_t k = 0; k < idx.size(); ++k) std::copy_n(cand[idx[k]].box, 4, boxes.begin() + static_cast<std::ptrdiff_t>(k * 4));
  std::vector<int> keep = nms_plus1(boxes.data(), idx.size(), p.nms);
  if (keep.size() > static_cast<size_t>(p.keep_top_k)) keep.resize(static_cast<size_t>(p.keep_top_k));
  std::vector<Face> faces;
  faces.reserve(keep.size());
  for (int k : keep) {
    const DetectCandidate& c = cand[idx[static_cast<size_t>(k)]];
    Face f;
    for (int j = 0; j < 4; ++j) f.box[static_cast<size_t>(j)] = c.box[j] / scale;
    for (int j = 0; j < 10; ++j) f.landmarks[static_cast<size_t>(j)] = c.landmarks[j] / scale;
    f.score = c.score;
    faces.push_back(f);
  }
  return faces;
}

GPEN_CUDA_NAMESPACE_END
