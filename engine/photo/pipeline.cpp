#include "engine/photo/pipeline.h"

#include <algorithm>
#include <chrono>

#include "engine/photo/align.h"
#include "kernels/cpu/face_io.h"
#include "engine/photo/paste.h"
#include "engine/photo/parse_mask.h"
#include "engine/core/stopwatch.h"

namespace gpen {

int choose_batch(const GpenConfig& base, Backend& backend, size_t budget, int cap) {
  WorkspaceFn ws = [&](const Graph& g, const Node& n) { return backend.workspace_bytes(g, n); };
  auto total = [&](int b) {
    GpenConfig c = base;
    c.batch = b;
    GpenGraph gg = build_gpen_graph(c);
    return plan_memory(gg.graph, ws).total_bytes();
  };
  size_t one = total(1);
  GPEN_CHECK(one <= budget, "one face at " + std::to_string(base.size) + "x" + std::to_string(base.size) + " needs " +
                                std::to_string(one) + " bytes, more than the memory budget of " +
                                std::to_string(budget));
  int lo = 1, hi = 2;
  while (hi <= cap && total(hi) <= budget) {
    lo = hi;
    hi *= 2;
  }
  hi = std::min(hi, cap + 1);
  while (hi - lo > 1) {
    int mid = (lo + hi) / 2;
    (total(mid) <= budget ? lo : hi) = mid;
  }
  return lo;
}

BatchChoice choose_batch_banded(const GpenConfig& base, Backend& backend, size_t budget, int cap,
                                const PlanOptions& opt) {
  WorkspaceFn ws = [&](const Graph& g, const Node& n) { return backend.workspace_bytes(g, n); };
  // Plain first; then with banding under the arena the budget leaves beside weights and workspace.
  auto fits = [&](int b, PlanOptions* used) {
    GpenConfig c = base;
    c.batch = b;
    GpenGraph gg = build_gpen_graph(c);
    MemoryPlan p = plan_memory(gg.graph, ws, opt);
    if (p.total_bytes() <= budget) return (*used = opt), true;
    const size_t fixed = p.weights_bytes + p.workspace_bytes;
    if (fixed >= budget) return false;
    PlanOptions o = opt;
    o.arena_budget = budget - fixed;
    TransformReport r = transform_for_memory(gg.graph, o);
    if (!r.banding_fits) return false;
    if (plan_memory(gg.graph, ws, o).total_bytes() > budget) return false;
    return (*used = o), true;
  };
  BatchChoice bc;
  GPEN_CHECK(fits(1, &bc.plan), "one face at " + std::to_string(base.size) + "x" + std::to_string(base.size) +
                                    " does not fit the memory budget of " + std::to_string(budget) +
                                    " bytes, not even with banded execution");
  int lo = 1, hi = 2;
  PlanOptions o;
  while (hi <= cap && fits(hi, &o)) {
    lo = hi;
    bc.plan = o;
    hi *= 2;
  }
  hi = std::min(hi, cap + 1);
  while (hi - lo > 1) {
    int mid = (lo + hi) / 2;
    if (fits(mid, &o)) lo = mid, bc.plan = o;
    else hi = mid;
  }
  bc.batch = lo;
  bc.banded = bc.plan.arena_budget > 0;
  return bc;
}

FaceRestorer::FaceRestorer(GpenModel& gpen, RetinaFaceDetector& det, const RestoreOptions& opt)
    : gpen_(gpen), det_(det), opt_(opt) {
  GPEN_CHECK(opt_.batch >= 1, "batch must be at least 1");
  // As in the official FaceEnhancement, whose alpha blend of an out_size face with its in_size
  // crop raises a size error: a FullGenerator_SR model runs on aligned crops only.
  GPEN_CHECK(gpen_.output_size() == gpen_.size(),
             "this GPEN model is FullGenerator_SR (" + std::to_string(gpen_.size()) + " -> " +
                 std::to_string(gpen_.output_size()) +
                 "): the official photo pipeline cannot paste its faces back (FaceEnhancement fails on the size "
                 "mismatch); run it on aligned crops (--aligned)");
  GPEN_CHECK(opt_.alpha >= 0.0 && opt_.alpha <= 1.0, "alpha must be in [0, 1]");
  if (opt_.device_pipeline && !opt_.parser)
    if (auto* dev = dynamic_cast<DeviceBackend*>(&gpen_.backend())) {
      ops_ = dev->pipeline_ops();
      det_ops_ = det_.pipeline_ops();
      if (!ops_ || !det_ops_) ops_ = det_ops_ = nullptr;
    }
  plan_batch(opt_.grow_batch ? 1 : opt_.batch);
}

void FaceRestorer::plan_batch(int batch) {
  const bool parser_shares =
      opt_.parser && opt_.share_arena && std::string(gpen_.backend().name()) == opt_.parser->backend().name();
  if (parser_shares) {
    // ParseNet at 512 usually plans more than GPEN: GPEN's arena is made that large, and the
    // parser and the detector run inside it, in turns (one arena: the largest plan, not a sum).
    const MemoryPlan& pp = opt_.parser->plan_for(kParseSize, kParseSize);
    gpen_.set_min_memory(pp.arena_bytes, pp.workspace_bytes);
  }
  gpen_.prepare(batch, opt_.plan);
  batch_ = batch;
  // Detection and restoration take turns, so the detector runs in the generator's arena (on the
  // same device) and the photo pipeline holds the larger of the two arenas, not their sum.
  if (opt_.share_arena && std::string(gpen_.backend().name()) == det_.device())
    det_.share_memory(gpen_.arena(), gpen_.arena_bytes(), gpen_.workspace(), gpen_.workspace_bytes());
  if (opt_.parser) {
    if (parser_shares) opt_.parser->share_memory(gpen_.arena(), gpen_.arena_bytes(), gpen_.workspace(), gpen_.workspace_bytes());
    opt_.parser->prepare(kParseSize, kParseSize);
  }
  if (ops_) return;
  const size_t face = static_cast<size_t>(gpen_.size()) * gpen_.size() * 3;
  in_.assign(face * static_cast<size_t>(batch), 0.0f);
  out_.assign(face * static_cast<size_t>(batch), 0.0f);
}

void FaceRestorer::grow_batch(size_t faces) {
  if (!opt_.grow_batch) return;
  const int want = static_cast<int>(std::min<size_t>(faces, static_cast<size_t>(opt_.batch)));
  if (want > batch_) plan_batch(want);
}

FaceRestorer::~FaceRestorer() { release_buffer(); }

PhotoResult FaceRestorer::process(ImageView photo) { return ops_ ? process_on_device(photo) : process_on_host(photo); }

PhotoResult FaceRestorer::process(ImageView photo, ImageView background) {
  GPEN_CHECK(background.width == photo.width && background.height == photo.height,
             "restore: the background is " + std::to_string(background.width) + "x" + std::to_string(background.height) +
                 ", the photo " + std::to_string(photo.width) + "x" + std::to_string(photo.height));
  if (ops_) {
    // The device pipeline keeps no host batch buffers: size them for the largest batch once.
    const size_t need = static_cast<size_t>(gpen_.size()) * gpen_.size() * 3 * static_cast<size_t>(opt_.batch);
    if (in_.size() < need) {
      in_.assign(need, 0.0f);
      out_.assign(need, 0.0f);
    }
  }
  return process_on_host(photo, &background);
}

PhotoResult FaceRestorer::process_on_host(ImageView photo, const ImageView* background) {
  PhotoResult r;
  const int S = gpen_.size();
  auto t0 = std::chrono::steady_clock::now();
  r.faces = det_.detect(photo, opt_.detect);
  r.times.detect_ms = ms_since(t0);

  t0 = std::chrono::steady_clock::now();
  std::vector<PastedFace> pasted;
  std::vector<AffineTransform> back;
  for (const Face& f : r.faces) {
    if (f.score < opt_.min_score) continue;
    PastedFace p;
    std::copy(f.landmarks.begin(), f.landmarks.end(), p.landmarks);
    std::copy(f.box.begin(), f.box.end(), p.box);
    AffineTransform fwd;
    p.crop = align_face(photo, p.landmarks, S, &fwd);
    back.push_back(invert(fwd));
    pasted.push_back(std::move(p));
  }
  r.times.align_ms = ms_since(t0);

  t0 = std::chrono::steady_clock::now();
  grow_batch(pasted.size());
  const size_t face = static_cast<size_t>(S) * S * 3;
  for (size_t start = 0; start < pasted.size(); start += batch_) {
    size_t n = std::min<size_t>(batch_, pasted.size() - start);
    // A short batch runs a smaller plan inside the same arena: no padding work, no new memory.
    for (size_t i = 0; i < n; ++i) face_to_model(pasted[start + i].crop, S, in_.data() + i * face);
    gpen_.run(static_cast<int>(n), in_.data(), out_.data());
    for (size_t i = 0; i < n; ++i) pasted[start + i].restored = model_to_face(out_.data() + i * face, S);
  }
  r.times.restore_ms = ms_since(t0);

  t0 = std::chrono::steady_clock::now();
  if (opt_.parser) {
    // The mask comes from the raw GPEN output (before smoothing and blending), as officially.
    for (auto& p : pasted)
      p.mask = std::make_shared<const std::vector<float>>(parse_paste_mask(face_parse(*opt_.parser, p.restored), S));
    r.mask = "parse";
  }
  for (const auto& p : pasted) r.restored_faces.push_back(p.restored);
  r.restored = static_cast<int>(pasted.size());
  const ImageView bg = background ? *background : photo;
  r.image = pasted.empty() ? to_image(bg) : paste_faces(bg, pasted, back, S, opt_.alpha);
  r.times.paste_ms = ms_since(t0);
  return r;
}

}  // namespace gpen
