// FaceRestorer on a device: the photo is uploaded once and stays there through detection, the
// crops, GPEN, the paste-back and the composite, which is the one download (besides the detection
// candidates and the restored faces PhotoResult hands back). The steps are the host pipeline's
// (pipeline.cpp) in the same order, each a twin of its host function (engine/runtime/pipeline_ops.h).
//
// Memory: one buffer from GPEN's backend, laid out below, sized by the photo and the batch and
// grown only when a larger photo arrives; nothing else is allocated per photo. The detector and
// GPEN run on their own streams, so they meet only where the host waits: the (pageable) upload,
// the detector's candidate download, the restored-face downloads and the final download.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "engine/photo/align.h"
#include "engine/runtime/device.h"
#include "engine/photo/paste.h"
#include "engine/photo/pipeline.h"
#include "engine/core/stopwatch.h"

namespace gpen {

namespace {

// Offsets into the buffer, each slot 256-byte aligned.
struct Layout {
  size_t photo = 0, canvas_mask = 0, canvas_faces = 0, scratch = 0, mask = 0, crops = 0, restored = 0, smoothed = 0,
         blended = 0, total = 0;
};

Layout layout(int w, int h, size_t scratch_bytes, int size, int batch) {
  Layout L;
  size_t at = 0;
  auto slot = [&at](size_t bytes) {
    const size_t o = at;
    at += (bytes + 255) / 256 * 256;
    return o;
  };
  const size_t px = static_cast<size_t>(w) * static_cast<size_t>(h);
  const size_t face = static_cast<size_t>(size) * static_cast<size_t>(size) * 3;
  L.photo = slot(px * 3);
  L.canvas_mask = slot(px * sizeof(float));
  L.canvas_faces = slot(px * 3);
  L.scratch = slot(scratch_bytes);
  L.mask = slot(face / 3 * sizeof(float));
  L.crops = slot(face * static_cast<size_t>(batch));
  L.restored = slot(face * static_cast<size_t>(batch));
  L.smoothed = slot(face);
  L.blended = slot(face);
  L.total = at;
  return L;
}

}  // namespace

void FaceRestorer::release_buffer() noexcept {
  if (!buffer_) return;
  gpen_.backend().synchronize();
  gpen_.backend().release(buffer_);
  buffer_ = nullptr;
  buffer_bytes_ = 0;
  mask_size_ = 0;
}

PhotoResult FaceRestorer::process_on_device(ImageView photo) {
  GPEN_CHECK(photo.width > 0 && photo.height > 0 && photo.bgr.size() == photo.pixels() * 3,
             "restore: empty or malformed image");
  PhotoResult r;
  Backend& be = gpen_.backend();
  const int S = gpen_.size(), W = photo.width, H = photo.height;
  int nw = 0, nh = 0;
  detect_input_scale(W, H, opt_.detect.max_side, opt_.detect.target_side, &nw, &nh);
  const size_t scratch = det_ops_->detect_scratch_bytes(nh, nw);
  Layout L = layout(W, H, scratch, S, batch_);
  // Grows only; returns whether the buffer was replaced (its contents are then gone).
  auto reserve = [&] {
    if (L.total <= buffer_bytes_) return false;
    release_buffer();
    buffer_ = be.allocate(L.total);
    buffer_bytes_ = L.total;
    return true;
  };
  reserve();
  auto* base = static_cast<uint8_t*>(buffer_);
  uint8_t* dphoto = base + L.photo;
  const size_t face = static_cast<size_t>(S) * S * 3;

  auto t0 = std::chrono::steady_clock::now();
  be.upload(dphoto, photo.bgr.data(), photo.bgr.size());
  r.faces = det_.detect_on_device(dphoto, W, H, opt_.detect, *det_ops_, base + L.scratch);
  r.times.detect_ms = ms_since(t0);

  // Host side, per face: the transforms and the checks paste_faces makes (a few doubles each).
  t0 = std::chrono::steady_clock::now();
  std::vector<const Face*> kept;
  std::vector<AffineTransform> fwd, back;
  for (const Face& f : r.faces) {
    if (f.score < opt_.min_score) continue;
    for (float v : f.box) GPEN_CHECK(std::isfinite(v), "restore: face " + std::to_string(kept.size()) + ": box is not finite");
    fwd.push_back(face_transform(f.landmarks.data(), S));
    back.push_back(invert(fwd.back()));
    kept.push_back(&f);
  }
  r.times.align_ms = ms_since(t0);
  if (kept.empty()) {
    r.image = to_image(photo);
    return r;
  }
  // A larger batch (grow_batch) needs more crop slots: in a new buffer, the photo goes up again.
  const int planned = batch_;
  grow_batch(kept.size());
  if (batch_ != planned) {
    L = layout(W, H, scratch, S, batch_);
    if (reserve()) {
      base = static_cast<uint8_t*>(buffer_);
      dphoto = base + L.photo;
      be.upload(dphoto, photo.bgr.data(), photo.bgr.size());
    }
  }
  auto* canvas_mask = reinterpret_cast<float*>(base + L.canvas_mask);
  uint8_t* canvas_faces = base + L.canvas_faces;
  const auto* mask = reinterpret_cast<const float*>(base + L.mask);
  uint8_t* crops = base + L.crops;
  uint8_t* restored = base + L.restored;
  if (mask_size_ != S) {
    const auto m = paste_mask(S);
    be.upload(base + L.mask, m->data(), m->size() * sizeof(float));
    mask_size_ = S;
  }

  // Per batch: crops, GPEN in place, restored faces; then each face's paste, in detection order
  // (the canvas keeps, per pixel, the face whose warped mask is largest so far).
  double paste_ms = 0;
  t0 = std::chrono::steady_clock::now();
  ops_->canvas_clear(canvas_mask, canvas_faces, W, H);
  for (size_t start = 0; start < kept.size(); start += batch_) {
    const size_t n = std::min<size_t>(batch_, kept.size() - start);
    for (size_t i = 0; i < n; ++i) ops_->warp_face(dphoto, W, H, fwd[start + i], S, crops + i * face);
    gpen_.run_in_place(
        static_cast<int>(n), [&](const TensorView& x) { ops_->face_to_model(crops, static_cast<int>(n), S, x); },
        [&](const TensorView& y) { ops_->model_to_face(y, restored); });
    for (size_t i = 0; i < n; ++i) {
      Image img{S, S, std::vector<uint8_t>(face)};
      be.download(img.bgr.data(), restored + i * face, face);
      r.restored_faces.push_back(std::move(img));
    }
    const auto tp = std::chrono::steady_clock::now();
    for (size_t i = 0; i < n; ++i) {
      const Face& f = *kept[start + i];
      const uint8_t* ef = restored + i * face;
      if (std::min(f.box[3] - f.box[1], f.box[2] - f.box[0]) < 100) {
        ops_->smooth_face(ef, base + L.smoothed, S);
        ef = base + L.smoothed;
      }
      if (opt_.alpha != 1.0) {
        ops_->blend_faces(ef, crops + i * face, opt_.alpha, base + L.blended, S);
        ef = base + L.blended;
      }
      ops_->canvas_add(ef, mask, S, back[start + i], canvas_mask, canvas_faces, W, H);
    }
    paste_ms += ms_since(tp);
  }
  r.times.restore_ms = ms_since(t0) - paste_ms;

  t0 = std::chrono::steady_clock::now();
  ops_->composite(dphoto, canvas_mask, canvas_faces, dphoto, W, H);
  r.image = Image{W, H, std::vector<uint8_t>(photo.bgr.size())};
  be.download(r.image.bgr.data(), dphoto, photo.bgr.size());
  r.times.paste_ms = paste_ms + ms_since(t0);
  r.restored = static_cast<int>(kept.size());
  return r;
}

}  // namespace gpen
