// The facexlib family's photo flow (see facexlib_flow.h).
#include "engine/photo/facexlib_flow.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "engine/core/error.h"
#include "engine/core/stopwatch.h"
#include "engine/photo/facexlib_align.h"
#include "engine/photo/parse_mask.h"
#include "engine/photo/paste.h"
#include "engine/photo/resize_lanczos.h"
#include "kernels/cpu/image_resize.h"

// The pre- and post-processing round as numpy's and torch's float32 steps do, one by one.
#include "engine/core/no_fp_contract.h"  // NOLINT: must follow the other includes

namespace gpen {

namespace {

constexpr int kFaceSize = kFacexlibFaceSize;

constexpr FacexlibRules kRules[] = {
    // name, threshold, upsize_below, detect_resize, misindexed_eyes, gray_transfer, linear_background, paste,
    // bg_tile_pad
    {"GFPGANer.enhance (facexlib)", 0.97f, 0, 0, false, false, false, FacexlibPaste::facexlib, 10},
    {"inference_codeformer.py (facelib)", 0.8f, 512, 640, true, true, true, FacexlibPaste::codeformer, 40},
};

// cv2's saturate_cast<uchar>(double): rounded half to even, clamped.
uint8_t saturate_u8(double v) { return static_cast<uint8_t>(std::clamp(std::nearbyint(v), 0.0, 255.0)); }

Image rounded(const std::vector<double>& bgr, int size) {
  Image out;
  out.width = out.height = size;
  out.bgr.resize(bgr.size());
  for (size_t i = 0; i < bgr.size(); ++i) out.bgr[i] = saturate_u8(bgr[i]);
  return out;
}

// Per-channel mean and std (numpy's var + 1e-5, then sqrt) of an n-pixel, 3-channel image.
template <class T>
void mean_std(const T* px, size_t n, double mean[3], double std_[3]) {
  for (size_t c = 0; c < 3; ++c) {
    long double s = 0;
    for (size_t i = 0; i < n; ++i) s += static_cast<long double>(px[i * 3 + c]);
    const double m = static_cast<double>(s / static_cast<long double>(n));
    long double v = 0;
    for (size_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(px[i * 3 + c]) - m;
      v += static_cast<long double>(d * d);
    }
    mean[c] = m;
    std_[c] = std::sqrt(static_cast<double>(v / static_cast<long double>(n)) + 1e-5);
  }
}

// add_restored_face on a gray photo: bgr2gray(restored) (0.2989 r + 0.5870 g + 0.1140 b in
// float64, on all three channels), then adain_npy with the aligned crop's per-channel statistics;
// blend < 1 then mixes it with the crop (the blend of 8-bit faces, blend_faces, in float64).
std::vector<double> gray_transfer(const Image& restored, const Image& crop, double blend) {
  const size_t n = restored.pixels();
  std::vector<double> g(n * 3);
  for (size_t i = 0; i < n; ++i) {
    const double b = restored.bgr[i * 3], gr = restored.bgr[i * 3 + 1], r = restored.bgr[i * 3 + 2];
    const double v = 0.2989 * r + 0.5870 * gr + 0.1140 * b;
    g[i * 3] = g[i * 3 + 1] = g[i * 3 + 2] = v;
  }
  double cm[3], cs[3], sm[3], ss[3];
  mean_std(g.data(), n, cm, cs);
  mean_std(crop.bgr.data(), n, sm, ss);
  for (size_t i = 0; i < n; ++i)
    for (size_t c = 0; c < 3; ++c) g[i * 3 + c] = (g[i * 3 + c] - cm[c]) / cs[c] * ss[c] + sm[c];
  if (blend != 1.0)
    for (size_t k = 0; k < g.size(); ++k) g[k] = g[k] * blend + crop.bgr[k] * (1.0 - blend);
  return g;
}

// The parser's input as paste_faces_to_input_image makes it: face.astype('float32') / 255. in
// float32, then (x - 0.5) / 0.5; RGB.
template <class T>
void parser_input(const T* bgr, size_t n, float* x) {
  for (size_t i = 0; i < n; ++i)
    for (size_t c = 0; c < 3; ++c) {
      const float v = static_cast<float>(bgr[i * 3 + 2 - c]) / 255.0f;
      x[i * 3 + c] = (v - 0.5f) / 0.5f;
    }
}

// cv2.resize(mask, (d, d)) of an s x s float64 mask, INTER_LINEAR: the source coordinate
// (x + 0.5) * s / d - 0.5 and its weights in float32 (cv2's coefficient type), the sums in
// float64, the borders clamped.
std::vector<double> resize_linear_f64(const std::vector<double>& src, int s, int d) {
  std::vector<int> i0(d);
  std::vector<float> a(d);
  const double step = 1.0 / (static_cast<double>(d) / s);
  for (int x = 0; x < d; ++x) {
    float f = static_cast<float>((x + 0.5) * step - 0.5);
    int i = static_cast<int>(std::floor(f));
    f -= static_cast<float>(i);
    if (i < 0) f = 0, i = 0;
    if (i >= s - 1) f = 0, i = s - 1;
    i0[x] = i;
    a[x] = f;
  }
  const auto at = [&](int y, int x) {
    const size_t r = static_cast<size_t>(y) * s;
    const int j = i0[x];
    const double w0 = 1.0f - a[x], w1 = a[x];
    return j + 1 < s ? src[r + j] * w0 + src[r + j + 1] * w1 : src[r + j] * w0;
  };
  std::vector<double> out(static_cast<size_t>(d) * d);
  for (int y = 0; y < d; ++y) {
    const int j = i0[y];
    const double b0 = 1.0f - a[y], b1 = a[y];
    for (int x = 0; x < d; ++x) {
      const double top = at(j, x);
      out[static_cast<size_t>(y) * d + x] = j + 1 < s ? top * b0 + at(j + 1, x) * b1 : top * b0;
    }
  }
  return out;
}

}  // namespace

const FacexlibRules& facexlib_rules(FacexlibHelper h) { return kRules[static_cast<int>(h)]; }

size_t FacexlibNet::weights_bytes() const {
  return gfpgan ? gfpgan->weights_bytes() : codeformer ? codeformer->weights_bytes() : restoreformer->weights_bytes();
}

const MemoryPlan& FacexlibNet::plan(float w) const {
  return gfpgan ? gfpgan->plan_for(1) : codeformer ? codeformer->plan_for(1, w) : restoreformer->plan_for(1);
}

std::unique_ptr<FacexlibNet> open_facexlib_net(const std::string& path, FaceFlow flow, Backend& backend, float w,
                                               std::optional<DType> precision) {
  auto n = std::make_unique<FacexlibNet>();
  if (flow == FaceFlow::gfpgan) {
    n->gfpgan = std::make_unique<GfpganModel>(path, backend, precision);
    const int size = n->gfpgan->config().out_size;
    GPEN_CHECK(size == kFaceSize, path + ": GFPGAN's flow aligns faces to the 512 x 512 FFHQ template; this model is " +
                                      std::to_string(size) + " x " + std::to_string(size));
    n->run = [g = n->gfpgan.get()](const float* in, float* out) { g->run(in, 1, out); };
  } else if (flow == FaceFlow::restoreformer) {
    n->restoreformer = std::make_unique<RestoreformerModel>(path, backend, precision);
    n->run = [m = n->restoreformer.get()](const float* in, float* out) { m->run(in, 1, out); };
  } else {
    GPEN_CHECK(flow == FaceFlow::codeformer, path + ": not a GFPGAN, CodeFormer or RestoreFormer model");
    n->codeformer = std::make_unique<CodeformerModel>(path, backend, precision);
    n->run = [m = n->codeformer.get(), w](const float* in, float* out) { m->run(in, 1, w, out); };
  }
  return n;
}

std::vector<size_t> facexlib_faces(const std::vector<Face>& faces, int width, int height, const FacexlibFlowOptions& o) {
  const FacexlibRules& rules = facexlib_rules(o.helper);
  const float threshold = o.threshold > 0 ? o.threshold : rules.threshold;
  std::vector<size_t> keep;
  for (size_t i = 0; i < faces.size(); ++i) {
    const Face& f = faces[i];
    if (!(f.score > threshold)) continue;
    const float* l = f.landmarks.data();
    const float dx = rules.misindexed_eyes ? l[1] - l[3] : l[0] - l[2];
    const float dy = rules.misindexed_eyes ? l[2] - l[4] : l[1] - l[3];
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

void facexlib_input(const Image& crop, float* x) {
  const size_t n = crop.pixels();
  for (size_t i = 0; i < n; ++i)
    for (size_t c = 0; c < 3; ++c) {
      const float v = static_cast<float>(static_cast<double>(crop.bgr[i * 3 + 2 - c]) / 255.0);
      x[i * 3 + c] = (v - 0.5f) / 0.5f;
    }
}

Image facexlib_output(const float* y, int size) {
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

bool is_gray_photo(ImageView img) {
  const size_t n = img.pixels();
  if (n == 0) return false;
  double sum = 0;
  for (int a = 0; a < 3; ++a) {
    const int b = (a + 1) % 3;
    long double s = 0, s2 = 0;
    for (size_t i = 0; i < n; ++i) {
      const int d = static_cast<int>(img.bgr[i * 3 + static_cast<size_t>(a)]) - img.bgr[i * 3 + static_cast<size_t>(b)];
      s += d;
      s2 += static_cast<long double>(d) * d;
    }
    const long double m = s / static_cast<long double>(n);
    sum += static_cast<double>(s2 / static_cast<long double>(n) - m * m);
  }
  return sum / 3.0 <= 10.0;
}

Image realesrgan_enhance(RrdbModel& model, ImageView img, int outscale, int tile, int tile_pad, SrReport* report) {
  SrOptions so;
  so.tile = tile;
  so.tile_pad = tile_pad;
  Image out = super_resolve(model, img, so, report);
  if (outscale != model.config().scale)
    out = resize_lanczos4(out, img.width * outscale, img.height * outscale);
  return out;
}

FacexlibRestorer::FacexlibRestorer(FaceNet net, RetinaFaceDetector* detector, ParseNetModel* parser,
                                   const FacexlibFlowOptions& opt)
    : net_(std::move(net)), det_(detector), parser_(parser), opt_(opt), rules_(facexlib_rules(opt.helper)) {
  GPEN_CHECK(opt.upscale >= 1 && opt.upscale <= 8, "upscale must be in 1..8, got " + std::to_string(opt.upscale));
  GPEN_CHECK(opt.blend >= 0.0 && opt.blend <= 1.0, "blend must be in [0, 1]");
  GPEN_CHECK(!opt.face_upsample || opt.background,
             "face upsampling runs the background upsampler on the faces: it needs one (--sr)");
  if (opt_.threshold <= 0) opt_.threshold = rules_.threshold;
}

std::pair<int, int> FacexlibRestorer::output_size(int width, int height) const {
  const int shorter = std::min(width, height);
  if (rules_.upsize_below > 0 && shorter > 0 && shorter < rules_.upsize_below) {
    const double f = static_cast<double>(rules_.upsize_below) / shorter;
    width = static_cast<int>(std::nearbyint(width * f));
    height = static_cast<int>(std::nearbyint(height * f));
  }
  return {width * opt_.upscale, height * opt_.upscale};
}

Image FacexlibRestorer::run_net(const Image& crop) {
  const size_t px = static_cast<size_t>(kFaceSize) * kFaceSize * 3;
  in_.resize(px);
  out_.resize(px);
  facexlib_input(crop, in_.data());
  net_(in_.data(), out_.data());
  return facexlib_output(out_.data(), kFaceSize);
}

PhotoResult FacexlibRestorer::process(ImageView photo, SrReport* bg_report) {
  GPEN_CHECK(photo.width > 0 && photo.height > 0 && photo.bgr.size() == photo.pixels() * 3,
             "restore: empty or malformed photo");
  GPEN_CHECK(det_, "restore: this flow was set up for aligned faces only (no detector)");
  PhotoResult r;
  auto t0 = std::chrono::steady_clock::now();
  const bool gray = rules_.gray_transfer && is_gray_photo(photo);
  // read_image's upsizing of small photos: the flow works on that image from here on.
  Image upsized;
  ImageView src = photo;
  if (const int shorter = std::min(photo.width, photo.height); shorter < rules_.upsize_below) {
    const auto [w, h] = output_size(photo.width, photo.height);
    const double f = static_cast<double>(rules_.upsize_below) / shorter;
    upsized = resize_bilinear(photo, w / opt_.upscale, h / opt_.upscale, f, f);
    src = upsized;
  }
  DetectOptions d;
  d.post.threshold = opt_.threshold;
  d.max_side = 0;  // the helpers detect on the image as they hold it (or as below)
  double scale = 1.0;
  if (rules_.detect_resize > 0) scale = std::max(1.0, static_cast<double>(rules_.detect_resize) / std::min(src.width, src.height));
  if (scale > 1.0) {
    const Image det_in = resize_bilinear(src, static_cast<int>(src.width * scale),
                                         static_cast<int>(src.height * scale));
    r.faces = det_->detect(det_in, d);
    // bboxes / scale, in float32 (the score keeps its value: only the threshold above reads it).
    const float s = static_cast<float>(scale);
    for (Face& f : r.faces) {
      for (float& v : f.box) v /= s;
      for (float& v : f.landmarks) v /= s;
    }
  } else {
    r.faces = det_->detect(src, d);
  }
  r.times.detect_ms = ms_since(t0);
  std::vector<FacexlibFace> pasted;
  for (size_t i : facexlib_faces(r.faces, src.width, src.height, opt_)) {
    t0 = std::chrono::steady_clock::now();
    const AffineTransform m = facexlib_face_transform(r.faces[i].landmarks.data(), kFaceSize);
    const Image crop = facexlib_align_face(src, m, kFaceSize);
    r.times.align_ms += ms_since(t0);
    t0 = std::chrono::steady_clock::now();
    FacexlibFace face;
    face.restored = run_net(crop);
    face.crop_to_output = opt_.face_upsample ? facexlib_face_upsample_inverse(m, opt_.upscale)
                                             : facexlib_inverse(m, opt_.upscale);
    if (gray) {
      auto g = std::make_shared<std::vector<double>>(gray_transfer(face.restored, crop, opt_.blend));
      face.restored = rounded(*g, kFaceSize);
      face.restored64 = std::move(g);
      r.restored_faces.push_back(face.restored);
    } else {
      r.restored_faces.push_back(face.restored);
      if (opt_.blend != 1.0) face.restored = blend_faces(face.restored, crop, opt_.blend);
    }
    r.times.restore_ms += ms_since(t0);
    if (opt_.face_upsample) {
      // face_upsampler.enhance(restored_face, outscale=upscale), counted with the paste that runs
      // it. A gray photo's float64 face enters as its 8-bit rounding (the official upsampler
      // reads the float values).
      t0 = std::chrono::steady_clock::now();
      face.restored = realesrgan_enhance(*opt_.background, face.restored, opt_.upscale, opt_.background_tile,
                                         rules_.bg_tile_pad);
      face.restored64.reset();
      r.times.paste_ms += ms_since(t0);
    }
    if (parser_) {
      t0 = std::chrono::steady_clock::now();  // counted with the paste, whose mask it makes
      const size_t n = static_cast<size_t>(kFaceSize) * kFaceSize;
      std::vector<float> x(n * 3);
      const int S = face.restored.width;
      if (face.restored64) {
        parser_input(face.restored64->data(), n, x.data());
      } else if (S != kFaceSize) {
        // An upsampled face: the parser reads it resized back to 512 (cv2.resize, INTER_LINEAR).
        const Image small = resize_bilinear(face.restored, kFaceSize, kFaceSize);
        parser_input(small.bgr.data(), n, x.data());
      } else {
        parser_input(face.restored.bgr.data(), n, x.data());
      }
      std::vector<uint8_t> labels(n);
      parser_->parse(x.data(), kFaceSize, kFaceSize, labels.data(), nullptr);
      std::vector<double> mask = facexlib_parse_mask(labels);
      // cv2.resize(parse_mask, face_size): the upsampled face's size.
      if (S != kFaceSize) mask = resize_linear_f64(mask, kFaceSize, S);
      face.parse_mask = std::make_shared<const std::vector<double>>(std::move(mask));
      r.times.paste_ms += ms_since(t0);
    }
    pasted.push_back(std::move(face));
  }
  t0 = std::chrono::steady_clock::now();
  // The background at the output size: cv2.resize to the image's own size is a copy, so the
  // image is read in place when nothing changes its size.
  const int W = src.width * opt_.upscale, H = src.height * opt_.upscale;
  Image up;
  if (opt_.background) {
    // The upsampler sees the photo as given (before any upsizing), and its result is resized
    // (Lanczos) to the output size when that differs.
    up = realesrgan_enhance(*opt_.background, photo, opt_.upscale, opt_.background_tile, rules_.bg_tile_pad, bg_report);
    if (up.width != W || up.height != H) up = resize_lanczos4(up, W, H);
  } else if (opt_.upscale > 1) {
    up = rules_.linear_background ? resize_bilinear(src, W, H) : resize_lanczos4(src, W, H);
  }
  r.image = facexlib_paste(up.width > 0 ? ImageView(up) : src, pasted, opt_.upscale, rules_.paste);
  r.restored = static_cast<int>(pasted.size());
  r.times.paste_ms += ms_since(t0);
  r.mask = parser_ ? "parse" : "rect";
  return r;
}

Image FacexlibRestorer::restore_aligned(ImageView face) {
  GPEN_CHECK(face.width > 0 && face.height > 0 && face.bgr.size() == face.pixels() * 3,
             "restore: empty or malformed face crop");
  // cv2.resize to the size the crop already has is a copy.
  const Image crop = face.width == kFaceSize && face.height == kFaceSize ? to_image(face)
                                                                         : resize_bilinear(face, kFaceSize, kFaceSize);
  Image restored = run_net(crop);
  if (rules_.gray_transfer && is_gray_photo(crop)) {
    return rounded(gray_transfer(restored, crop, opt_.blend), kFaceSize);  // imwrite of the float64 face
  }
  if (opt_.blend != 1.0) restored = blend_faces(restored, crop, opt_.blend);
  return restored;
}

}  // namespace gpen
