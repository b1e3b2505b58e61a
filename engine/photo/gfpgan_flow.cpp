// GFPGAN's photo flow (see gfpgan_flow.h).
#include "engine/photo/gfpgan_flow.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>

#include "engine/core/error.h"
#include "engine/core/stopwatch.h"
#include "engine/photo/facexlib_align.h"
#include "engine/photo/facexlib_paste.h"
#include "engine/photo/paste.h"
#include "engine/photo/resize_lanczos.h"
#include "kernels/cpu/image_resize.h"

// The pre- and post-processing round as numpy's and torch's float32 steps do, one by one.
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

namespace gpen {

std::vector<size_t> facexlib_faces(const std::vector<Face>& faces, int width, int height, const GfpganFlowOptions& o) {
  std::vector<size_t> keep;
  for (size_t i = 0; i < faces.size(); ++i) {
    const Face& f = faces[i];
    if (!(f.score > o.threshold)) continue;
    const float dx = f.landmarks[0] - f.landmarks[2], dy = f.landmarks[1] - f.landmarks[3];
    if (std::sqrt(dx * dx + dy * dy) < o.eye_dist_threshold) continue;
    keep.push_back(i);
  }
  if (o.only_center_face && keep.size() > 1) {
    // get_center_face: the box centre nearest (w / 2, h / 2); the first of equals.
    size_t best = keep[0];
    double best_d = std::numeric_limits<double>::infinity();
    for (size_t i : keep) {
      const Face& f = faces[i];
      const double cx = (static_cast<double>(f.box[0]) + f.box[2]) / 2 - width / 2.0;
      const double cy = (static_cast<double>(f.box[1]) + f.box[3]) / 2 - height / 2.0;
      const double d = std::hypot(cx, cy);
      if (d < best_d) {
        best_d = d;
        best = i;
      }
    }
    keep = {best};
  }
  return keep;
}

void gfpgan_input(const Image& crop, float* x) {
  const size_t n = crop.pixels();
  for (size_t i = 0; i < n; ++i)
    for (size_t c = 0; c < 3; ++c) {
      const float v = static_cast<float>(static_cast<double>(crop.bgr[i * 3 + 2 - c]) / 255.0);
      x[i * 3 + c] = (v - 0.5f) / 0.5f;
    }
}

Image gfpgan_output(const float* y, int size) {
  Image out;
  out.width = out.height = size;
  out.bgr.resize(out.pixels() * 3);
  for (size_t i = 0; i < out.pixels(); ++i)
    for (size_t c = 0; c < 3; ++c) {
      const float v = std::clamp(y[i * 3 + c], -1.0f, 1.0f);
      const float u = (v + 1.0f) / 2.0f;
      out.bgr[i * 3 + 2 - c] = static_cast<uint8_t>(std::nearbyint(u * 255.0f));
    }
  return out;
}

Image gfpgan_restore_aligned(GfpganModel& net, ImageView face, double blend, std::vector<float>& in,
                             std::vector<float>& out) {
  GPEN_CHECK(face.width > 0 && face.height > 0 && face.bgr.size() == face.pixels() * 3,
             "restore: empty or malformed face crop");
  GPEN_CHECK(blend >= 0.0 && blend <= 1.0, "blend must be in [0, 1]");
  const int S = net.config().out_size;
  // cv2.resize to the size the crop already has is a copy.
  const Image crop = face.width == S && face.height == S ? to_image(face) : resize_bilinear(face, S, S);
  const size_t px = static_cast<size_t>(S) * static_cast<size_t>(S) * 3;
  if (in.size() < px) in.resize(px);
  if (out.size() < px) out.resize(px);
  gfpgan_input(crop, in.data());
  net.run(in.data(), 1, out.data());
  Image restored = gfpgan_output(out.data(), S);
  if (blend != 1.0) restored = blend_faces(restored, crop, blend);
  return restored;
}

GfpganRestorer::GfpganRestorer(GfpganModel& net, RetinaFaceDetector& detector, const GfpganFlowOptions& opt)
    : net_(net), det_(detector), opt_(opt) {
  GPEN_CHECK(opt.upscale >= 1 && opt.upscale <= 8, "upscale must be in 1..8, got " + std::to_string(opt.upscale));
  GPEN_CHECK(opt.blend >= 0.0 && opt.blend <= 1.0, "blend must be in [0, 1]");
  GPEN_CHECK(net.config().out_size == 512,
             "GFPGAN's photo flow aligns faces to the 512 x 512 FFHQ template; this model's size is " +
                 std::to_string(net.config().out_size));
}

PhotoResult GfpganRestorer::process(ImageView photo) {
  GPEN_CHECK(photo.width > 0 && photo.height > 0 && photo.bgr.size() == photo.pixels() * 3,
             "restore: empty or malformed photo");
  PhotoResult r;
  const int S = net_.config().out_size;
  auto t0 = std::chrono::steady_clock::now();
  DetectOptions d;
  d.post.threshold = opt_.threshold;
  d.max_side = 0;  // facexlib detects on the photo at its own size
  r.faces = det_.detect(photo, d);
  r.times.detect_ms = ms_since(t0);
  std::vector<FacexlibFace> pasted;
  const size_t px = static_cast<size_t>(S) * static_cast<size_t>(S) * 3;
  in_.resize(px);
  out_.resize(px);
  for (size_t i : facexlib_faces(r.faces, photo.width, photo.height, opt_)) {
    t0 = std::chrono::steady_clock::now();
    const AffineTransform m = facexlib_face_transform(r.faces[i].landmarks.data(), S);
    const Image crop = facexlib_align_face(photo, m, S);
    r.times.align_ms += ms_since(t0);
    t0 = std::chrono::steady_clock::now();
    gfpgan_input(crop, in_.data());
    net_.run(in_.data(), 1, out_.data());
    Image restored = gfpgan_output(out_.data(), S);
    r.restored_faces.push_back(restored);
    if (opt_.blend != 1.0) restored = blend_faces(restored, crop, opt_.blend);
    r.times.restore_ms += ms_since(t0);
    pasted.push_back({std::move(restored), facexlib_inverse(m, opt_.upscale), nullptr});
  }
  t0 = std::chrono::steady_clock::now();
  // cv2.resize to the photo's own size is a copy: the photo is read in place.
  Image up;
  if (opt_.upscale > 1) up = resize_lanczos4(photo, photo.width * opt_.upscale, photo.height * opt_.upscale);
  r.image = facexlib_paste(opt_.upscale > 1 ? ImageView(up) : photo, pasted, opt_.upscale);
  r.restored = static_cast<int>(pasted.size());
  r.times.paste_ms = ms_since(t0);
  return r;
}

Image GfpganRestorer::restore_aligned(ImageView face) {
  return gfpgan_restore_aligned(net_, face, opt_.blend, in_, out_);
}

}  // namespace gpen
