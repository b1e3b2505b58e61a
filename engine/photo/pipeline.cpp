// FaceRestorer: the photo pipeline as one flow of steps (engine/runtime/pipeline_ops.h), on the
// host or on a device. On a device the photos are uploaded once and stay there through detection,
// the crops, GPEN (its input written and its output read in place in the arena), the paste-back
// and the composite, which is the one download besides the detection candidates and the restored
// faces PhotoResult hands back; the detector and GPEN run on their own streams, so they meet only
// where the host waits. On the host the same steps read the caller's pixels in place.
//
// Memory: one buffer per kind of memory, laid out below, sized by the photos and the batch and
// grown only when a larger call arrives; nothing else of the photo's size is allocated per call.
#include "engine/photo/pipeline.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "engine/core/stopwatch.h"
#include "engine/photo/align.h"
#include "engine/photo/parse_mask.h"
#include "engine/photo/paste.h"
#include "engine/runtime/device.h"

namespace gpen {

namespace {

// Offsets into the buffer, each slot 256-byte aligned: per photo its pixels (device only: the host
// steps read the caller's) and paste canvas, then what one batch of faces needs.
struct Layout {
  std::vector<size_t> photo, canvas_mask, canvas_faces;
  size_t scratch = 0, mask = 0, crops = 0, restored = 0, smoothed = 0, blended = 0, total = 0;
};

Layout layout(std::span<const PhotoSize> photos, bool host, size_t scratch_bytes, int size, int batch) {
  Layout L;
  size_t at = 0;
  auto slot = [&at](size_t bytes) {
    const size_t o = at;
    at += (bytes + 255) / 256 * 256;
    return o;
  };
  const size_t face = static_cast<size_t>(size) * static_cast<size_t>(size) * 3;
  for (const PhotoSize& p : photos) {
    L.photo.push_back(slot(host ? 0 : p.pixels() * 3));
    L.canvas_mask.push_back(slot(p.pixels() * sizeof(float)));
    L.canvas_faces.push_back(slot(p.pixels() * 3));
  }
  L.scratch = slot(scratch_bytes);
  L.mask = slot(host ? 0 : face / 3 * sizeof(float));  // the host steps read the cached paste mask
  L.crops = slot(face * static_cast<size_t>(batch));
  L.restored = slot(face * static_cast<size_t>(batch));
  L.smoothed = slot(face);
  L.blended = slot(face);
  L.total = at;
  return L;
}

void check_photo(ImageView p, const char* what) {
  GPEN_CHECK(p.width > 0 && p.height > 0 && p.bgr.size() == p.pixels() * 3, std::string("restore: empty or malformed ") + what);
  GPEN_CHECK(p.width <= kMaxImageSide && p.height <= kMaxImageSide && int64_t{p.width} * p.height <= kMaxImagePixels,
             "restore: the " + std::string(what) + " is " + std::to_string(p.width) + "x" + std::to_string(p.height) +
                 ", more than an image may have");
}

}  // namespace

bool FaceRestorer::Buffer::reserve(size_t need) {
  if (need <= bytes) return false;
  release();
  data = mem->allocate(need);
  bytes = need;
  return true;
}

void FaceRestorer::Buffer::release() noexcept {
  if (!data) return;
  mem->synchronize();
  mem->release(data);
  data = nullptr;
  bytes = 0;
  mask_size = 0;
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
  // The device steps when both networks' memory has them; the face parser's pre- and
  // post-processing are host functions, so with it the steps stay on the host.
  if (opt_.device_pipeline && !opt_.parser && is_device_backend(gpen_.backend())) {
    device_ops_ = pipeline_ops_of(gpen_.backend());
    det_device_ops_ = det_.pipeline_ops();
    if (!device_ops_ || !det_device_ops_ || det_device_ops_ == &cpu_pipeline_ops())
      device_ops_ = det_device_ops_ = nullptr;
  }
  device_buf_.mem = &gpen_.backend();
  if (!is_device_backend(gpen_.backend())) host_buf_.mem = &gpen_.backend();
  // With a memory budget GPEN is fitted when the first call says what the photos hold.
  if (opt_.memory_budget) {
    GPEN_CHECK(!opt_.grow_batch && !opt_.parser, "the low-memory mode plans a fixed batch and the rectangle mask");
    return;
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
  if (!opt_.grow_batch) gpen_.prepare_smaller();
  batch_ = batch;
  // Detection and restoration take turns, so the detector runs in the generator's arena (on the
  // same device) and the photo pipeline holds the larger of the two arenas, not their sum.
  if (opt_.share_arena && std::string(gpen_.backend().name()) == det_.device())
    det_.share_memory(gpen_.arena(), gpen_.arena_bytes(), gpen_.workspace(), gpen_.workspace_bytes());
  if (opt_.parser) {
    if (parser_shares) opt_.parser->share_memory(gpen_.arena(), gpen_.arena_bytes(), gpen_.workspace(), gpen_.workspace_bytes());
    opt_.parser->prepare(kParseSize, kParseSize);
  }
}

void FaceRestorer::grow_batch(size_t faces) {
  if (!opt_.grow_batch) return;
  const int want = static_cast<int>(std::min<size_t>(faces, static_cast<size_t>(opt_.batch)));
  if (want > batch_) plan_batch(want);
}

FaceRestorer::~FaceRestorer() {
  device_buf_.release();
  host_buf_.release();
}

FaceRestorer::Steps FaceRestorer::steps_for(bool backgrounds) {
  Steps st;
  // A background is composited on the host (the device steps composite onto the photo they hold).
  if (device_ops_ && !backgrounds) {
    st.ops = device_ops_;
    st.det_ops = det_device_ops_;
    st.buf = &device_buf_;
    st.host = false;
    return st;
  }
  if (!host_buf_.mem) host_buf_.mem = (host_mem_ = make_cpu_backend()).get();
  st.ops = st.det_ops = &cpu_pipeline_ops();
  st.buf = &host_buf_;
  st.gpen_in_memory = !is_device_backend(gpen_.backend());
  st.det_in_memory = det_.pipeline_ops() == &cpu_pipeline_ops();
  return st;
}

void FaceRestorer::run_gpen(const Steps& st, int n, const uint8_t* crops, uint8_t* restored) {
  const int S = gpen_.size();
  if (st.gpen_in_memory) {
    gpen_.run_in_place(
        n, [&](const TensorView& x) { st.ops->face_to_model(crops, n, S, x); },
        [&](const TensorView& y) { st.ops->model_to_face(y, restored); });
    return;
  }
  // Host steps, GPEN on a device: model space through host buffers (GpenModel converts and copies).
  const size_t batch = static_cast<size_t>(S) * S * 3 * static_cast<size_t>(batch_);
  if (in_.size() < batch) {
    in_.assign(batch, 0.0f);
    out_.assign(batch, 0.0f);
  }
  const Shape shape{n, S, S, 3};
  st.ops->face_to_model(crops, n, S, make_view(in_.data(), DType::f32, shape));
  gpen_.run(n, in_.data(), out_.data());
  st.ops->model_to_face(make_view(out_.data(), DType::f32, shape), restored);
}

FaceRestorer::CallBytes FaceRestorer::call_bytes(std::span<const PhotoSize> photos, bool backgrounds,
                                                 const Steps& st) const {
  CallBytes cb;
  for (const PhotoSize& p : photos) {
    int nw = 0, nh = 0;
    detect_input_scale(p.width, p.height, opt_.detect.max_side, opt_.detect.target_side, &nw, &nh);
    cb.scratch = std::max(cb.scratch, st.det_ops->detect_scratch_bytes(nh, nw));
    if (int64_t{nw} * nh > int64_t{cb.det_w} * cb.det_h) cb.det_h = nh, cb.det_w = nw;
    // The photo, its background, and the composite made of them.
    cb.images += p.pixels() * 3 * (backgrounds ? 3 : 2);
  }
  // With a memory budget the batch is fixed (opt_.batch) and GPEN fitted before the first detection.
  cb.batch = opt_.memory_budget ? opt_.batch : batch_;
  const int S = gpen_.size();
  // The buffer, and one batch of restored faces on their way to the caller.
  cb.buffer = layout(photos, st.host, cb.scratch, S, cb.batch).total + static_cast<size_t>(S) * S * 3 * cb.batch;
  cb.what = photos.size() == 1 ? "the " + std::to_string(photos[0].width) + "x" + std::to_string(photos[0].height) + " photo"
                               : std::to_string(photos.size()) + " photos";
  return cb;
}

const BudgetUse& FaceRestorer::plan_call(PhotoSize photo) {
  GPEN_CHECK(opt_.memory_budget > 0, "planning a photo's account needs the low-memory mode (a memory budget)");
  GPEN_CHECK(photo.width > 0 && photo.height > 0 && photo.width <= kMaxImageSide && photo.height <= kMaxImageSide,
             "a photo of " + std::to_string(photo.width) + "x" + std::to_string(photo.height) + " pixels cannot be planned");
  const CallBytes cb = call_bytes(std::span(&photo, 1), false, steps_for(false));
  fit_call(cb.images, cb.buffer, 0, cb.det_h, cb.det_w, cb.what);
  return budget_use_;
}

PhotoResult FaceRestorer::process(ImageView photo) { return std::move(process(std::span(&photo, 1)).front()); }

PhotoResult FaceRestorer::process(ImageView photo, ImageView background) {
  return std::move(process(std::span(&photo, 1), std::span(&background, 1)).front());
}

std::vector<PhotoResult> FaceRestorer::process(std::span<const ImageView> photos,
                                               std::span<const ImageView> backgrounds, const FaceAdjust& adjust) {
  GPEN_CHECK(backgrounds.empty() || backgrounds.size() == photos.size(),
             "restore: " + std::to_string(photos.size()) + " photos but " + std::to_string(backgrounds.size()) +
                 " backgrounds");
  for (size_t p = 0; p < photos.size(); ++p) {
    check_photo(photos[p], "photo");
    if (backgrounds.empty()) continue;
    check_photo(backgrounds[p], "background");
    GPEN_CHECK(backgrounds[p].width == photos[p].width && backgrounds[p].height == photos[p].height,
               "restore: the background is " + std::to_string(backgrounds[p].width) + "x" +
                   std::to_string(backgrounds[p].height) + ", the photo " + std::to_string(photos[p].width) + "x" +
                   std::to_string(photos[p].height));
  }
  const Steps st = steps_for(!backgrounds.empty());
  PipelineOps& ops = *st.ops;
  Buffer& buf = *st.buf;
  const int S = gpen_.size();
  const size_t face = static_cast<size_t>(S) * S * 3;
  std::vector<PhotoSize> sizes;
  for (const ImageView& p : photos) sizes.push_back({p.width, p.height});
  const CallBytes cb = call_bytes(sizes, !backgrounds.empty(), st);
  Layout L = layout(sizes, st.host, cb.scratch, S, cb.batch);
  fit_call(cb.images, cb.buffer, 0, cb.det_h, cb.det_w, cb.what);
  auto base = [&buf] { return static_cast<uint8_t*>(buf.data); };
  auto pixels = [&](size_t p) -> const uint8_t* { return st.host ? photos[p].bgr.data() : base() + L.photo[p]; };
  auto upload_photos = [&] {
    if (!st.host)
      for (size_t p = 0; p < photos.size(); ++p) buf.mem->upload(base() + L.photo[p], photos[p].bgr.data(), photos[p].bgr.size());
  };
  buf.reserve(L.total);
  upload_photos();

  // Detection, then per face kept the transforms and the checks of the paste (a few doubles each).
  struct Kept {
    size_t photo, face;
    AffineTransform fwd, back;
  };
  std::vector<Kept> kept;
  std::vector<PhotoResult> results(photos.size());
  for (size_t p = 0; p < photos.size(); ++p) {
    PhotoResult& r = results[p];
    r.mask = opt_.parser ? "parse" : "rect";
    auto t0 = std::chrono::steady_clock::now();
    r.faces = st.det_in_memory ? det_.detect_in_memory(pixels(p), photos[p].width, photos[p].height, opt_.detect,
                                                       *st.det_ops, base() + L.scratch)
                               : det_.detect(photos[p], opt_.detect);
    r.times.detect_ms = ms_since(t0);
    t0 = std::chrono::steady_clock::now();
    if (adjust) adjust(p, r.faces);
    for (size_t k = 0; k < r.faces.size(); ++k) {
      const Face& f = r.faces[k];
      if (f.score < opt_.min_score) continue;
      for (float v : f.box) GPEN_CHECK(std::isfinite(v), "restore: face " + std::to_string(k) + ": box is not finite");
      const AffineTransform fwd = face_transform(f.landmarks.data(), S);
      kept.push_back({p, k, fwd, invert(fwd)});
      ++r.restored;
    }
    r.times.align_ms = ms_since(t0);
  }
  // Faces kept for the caller count in a memory budget: fitted again now that their number is known.
  if (opt_.keep_faces && !kept.empty()) fit_call(cb.images, cb.buffer, face * kept.size(), cb.det_h, cb.det_w, cb.what);
  // A larger batch (grow_batch) needs more crop slots: in a new buffer, the photos go up again.
  const int planned = batch_;
  grow_batch(kept.size());
  if (batch_ != planned) {
    L = layout(sizes, st.host, cb.scratch, S, batch_);
    if (buf.reserve(L.total)) upload_photos();
  }
  // The rectangle mask, unless every face brings its own (the parser's, computed on the host).
  std::shared_ptr<const std::vector<float>> rect;
  const float* rect_mask = nullptr;
  if (!kept.empty() && !opt_.parser) {
    rect = paste_mask(S);
    rect_mask = rect->data();
    if (!st.host) {
      if (buf.mask_size != S) {
        buf.mem->upload(base() + L.mask, rect->data(), rect->size() * sizeof(float));
        buf.mask_size = S;
      }
      rect_mask = reinterpret_cast<const float*>(base() + L.mask);
    }
  }
  auto canvas_mask = [&](size_t p) { return reinterpret_cast<float*>(base() + L.canvas_mask[p]); };
  auto canvas_faces = [&](size_t p) { return base() + L.canvas_faces[p]; };
  for (size_t p = 0; p < photos.size(); ++p)
    if (results[p].restored) ops.canvas_clear(canvas_mask(p), canvas_faces(p), photos[p].width, photos[p].height);

  // Per batch: crops, GPEN, restored faces; then each face's paste, in detection order (a canvas
  // keeps, per pixel, the face whose warped mask is largest so far).
  uint8_t* crops = base() + L.crops;
  uint8_t* restored = base() + L.restored;
  uint8_t* smoothed = base() + L.smoothed;
  uint8_t* blended = base() + L.blended;
  for (size_t start = 0; start < kept.size(); start += static_cast<size_t>(batch_)) {
    const size_t n = std::min<size_t>(static_cast<size_t>(batch_), kept.size() - start);
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < n; ++i) {
      const Kept& k = kept[start + i];
      ops.warp_face(pixels(k.photo), photos[k.photo].width, photos[k.photo].height, k.fwd, S, crops + i * face);
    }
    run_gpen(st, static_cast<int>(n), crops, restored);
    std::vector<Image> batch_faces(n);
    for (size_t i = 0; i < n; ++i) {
      batch_faces[i] = Image{S, S, std::vector<uint8_t>(face)};
      buf.mem->download(batch_faces[i].bgr.data(), restored + i * face, face);
    }
    const double per_face = ms_since(t0) / static_cast<double>(n);
    for (size_t i = 0; i < n; ++i) {
      const Kept& k = kept[start + i];
      PhotoResult& r = results[k.photo];
      r.times.restore_ms += per_face;
      const auto tp = std::chrono::steady_clock::now();
      const float* mask = rect_mask;
      std::vector<float> parsed;
      if (opt_.parser) {
        // From the raw GPEN output (before smoothing and blending), as officially; host memory,
        // since a parser keeps the steps on the host.
        parsed = parse_paste_mask(face_parse(*opt_.parser, batch_faces[i]), S);
        mask = parsed.data();
      }
      const uint8_t* ef = restored + i * face;
      if (is_small_face(r.faces[k.face].box.data())) {
        ops.smooth_face(ef, smoothed, S);
        ef = smoothed;
      }
      // addWeighted with alpha 1 and beta 0 returns its first input exactly.
      if (opt_.alpha != 1.0) {
        ops.blend_faces(ef, crops + i * face, opt_.alpha, blended, S);
        ef = blended;
      }
      ops.canvas_add(ef, mask, S, k.back, canvas_mask(k.photo), canvas_faces(k.photo), photos[k.photo].width,
                     photos[k.photo].height);
      if (opt_.keep_faces) r.restored_faces.push_back(std::move(batch_faces[i]));
      r.times.paste_ms += ms_since(tp);
    }
  }

  for (size_t p = 0; p < photos.size(); ++p) {
    PhotoResult& r = results[p];
    const ImageView original = backgrounds.empty() ? photos[p] : backgrounds[p];
    if (!r.restored) {
      r.image = to_image(original);
      continue;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const int W = original.width, H = original.height;
    r.image = Image{W, H, std::vector<uint8_t>(original.bgr.size())};
    if (st.host) {
      ops.composite(original.bgr.data(), canvas_mask(p), canvas_faces(p), r.image.bgr.data(), W, H);
    } else {
      uint8_t* d = base() + L.photo[p];
      ops.composite(d, canvas_mask(p), canvas_faces(p), d, W, H);
      buf.mem->download(r.image.bgr.data(), d, original.bgr.size());
    }
    r.times.paste_ms += ms_since(t0);
  }
  return results;
}

}  // namespace gpen
