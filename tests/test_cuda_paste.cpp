// CUDA paste-back kernels against engine/photo/paste.cpp: smoothing, alpha blend, the per-face
// accumulation (PasteCanvas::add) and the composite, then the whole paste_faces sequence on a
// 64 x 48 photo with overlapping faces, one partly outside the photo. Everything is compared bit
// for bit: the kernels perform the CPU's integer arithmetic, its one FMA (the blend) and its
// unfused float operations in the same order.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "engine/core/error.h"
#include "engine/photo/paste.h"
#include "kernels/cuda/ops_pipeline.h"
#include "tests/cuda_emu/test_util.h"

using namespace gpen;
using cuda_test::DeviceBuffer;

namespace {

constexpr int kW = 64, kH = 48, kS = 16;

Image random_image(int w, int h, uint32_t seed) {
  std::mt19937 rng(seed);
  Image img;
  img.width = w;
  img.height = h;
  img.bgr.resize(img.pixels() * 3);
  for (auto& b : img.bgr) b = static_cast<uint8_t>(rng() & 0xff);
  return img;
}

DeviceBuffer upload(const Image& img) {
  DeviceBuffer d(img.bgr.size());
  d.upload(img.bgr);
  return d;
}

size_t count_diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  REQUIRE(a.size() == b.size());
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
  return n;
}

// Crop -> photo transforms: rotated, scaled 1.3..3.5, overlapping, the last one partly outside.
std::vector<AffineTransform> transforms() {
  auto sim = [](double s, double a, double tx, double ty) {
    return AffineTransform{{s * std::cos(a), -s * std::sin(a), tx, s * std::sin(a), s * std::cos(a), ty}};
  };
  return {sim(2.0, 0.3, 12, 4), sim(1.3, -0.7, 22, 14), sim(3.5, 2.5, 40, 40), sim(1.7, 0.0, 50, -6)};
}

}  // namespace

TEST_CASE("cuda paste_smooth_face and paste_blend_faces are bit-exact") {
  for (int S : {1, 2, 3, kS, 23}) {
    CAPTURE(S);
    const Image a = random_image(S, S, static_cast<uint32_t>(S)), b = random_image(S, S, static_cast<uint32_t>(S) + 100);
    DeviceBuffer da = upload(a), db = upload(b), dout(a.bgr.size());
    cuda::paste_smooth_face(da.as<uint8_t>(), dout.as<uint8_t>(), S, nullptr);
    CHECK(count_diff(dout.download<uint8_t>(a.bgr.size()), smooth_small_face(a).bgr) == 0);
    for (double alpha : {1.0, 0.0, 0.3, 0.77, -0.5, 1.9}) {
      CAPTURE(alpha);
      cuda::paste_blend_faces(da.as<uint8_t>(), db.as<uint8_t>(), alpha, dout.as<uint8_t>(), S, nullptr);
      CHECK(count_diff(dout.download<uint8_t>(a.bgr.size()), blend_faces(a, b, alpha).bgr) == 0);
    }
    // In place over the restored face.
    cuda::paste_blend_faces(da.as<uint8_t>(), db.as<uint8_t>(), 0.6, da.as<uint8_t>(), S, nullptr);
    CHECK(count_diff(da.download<uint8_t>(a.bgr.size()), blend_faces(a, b, 0.6).bgr) == 0);
  }
}

TEST_CASE("cuda paste_accumulate and paste_composite equal PasteCanvas, face by face") {
  const auto mask = paste_mask(kS);
  DeviceBuffer dmask(mask->size() * 4);
  dmask.upload(*mask);
  const Image photo = random_image(kW, kH, 7);
  DeviceBuffer dphoto = upload(photo);
  DeviceBuffer cmask(size_t{kW} * kH * 4), cfaces(size_t{kW} * kH * 3), dout(photo.bgr.size());
  cuda::paste_canvas_clear(cmask.as<float>(), cfaces.as<uint8_t>(), kW, kH, nullptr);
  PasteCanvas canvas(kW, kH);
  const auto ts = transforms();
  for (size_t i = 0; i < ts.size(); ++i) {
    CAPTURE(i);
    const Image face = random_image(kS, kS, 20 + static_cast<uint32_t>(i));
    DeviceBuffer dface = upload(face);
    canvas.add(face, *mask, ts[i]);
    cuda::paste_accumulate(dface.as<uint8_t>(), dmask.as<float>(), kS, ts[i], cmask.as<float>(), cfaces.as<uint8_t>(),
                           kW, kH, nullptr);
    const auto gm = cmask.download<float>(canvas.mask().size());
    size_t bad = 0;
    for (size_t k = 0; k < gm.size(); ++k) bad += std::memcmp(&gm[k], &canvas.mask()[k], 4) != 0;
    CHECK(bad == 0);
    CHECK(count_diff(cfaces.download<uint8_t>(canvas.faces().bgr.size()), canvas.faces().bgr) == 0);
  }
  const Image want = canvas.composite(photo);
  cuda::paste_composite(dphoto.as<uint8_t>(), cmask.as<float>(), cfaces.as<uint8_t>(), dout.as<uint8_t>(), kW, kH, nullptr);
  CHECK(count_diff(dout.download<uint8_t>(want.bgr.size()), want.bgr) == 0);
  // In place over the photo.
  cuda::paste_composite(dphoto.as<uint8_t>(), cmask.as<float>(), cfaces.as<uint8_t>(), dphoto.as<uint8_t>(), kW, kH,
                        nullptr);
  CHECK(count_diff(dphoto.download<uint8_t>(want.bgr.size()), want.bgr) == 0);
  // The composite changed pixels (the faces landed) and kept others (outside every footprint).
  CHECK(count_diff(want.bgr, photo.bgr) > 1000);
  CHECK(count_diff(want.bgr, photo.bgr) < photo.bgr.size());
}

TEST_CASE("cuda paste kernels reproduce paste_faces (smoothing, blend, accumulation, composite)") {
  const auto mask = paste_mask(kS);
  DeviceBuffer dmask(mask->size() * 4);
  dmask.upload(*mask);
  const Image photo = random_image(kW, kH, 31);
  const auto ts = transforms();
  const double alpha = 0.8;
  std::vector<PastedFace> faces(ts.size());
  for (size_t i = 0; i < faces.size(); ++i) {
    faces[i].restored = random_image(kS, kS, 40 + static_cast<uint32_t>(i));
    faces[i].crop = random_image(kS, kS, 60 + static_cast<uint32_t>(i));
    const float side = i % 2 == 0 ? 80.0f : 150.0f;  // half of them are "small" faces: smoothed
    faces[i].box[0] = 3;
    faces[i].box[1] = 5;
    faces[i].box[2] = 3 + side;
    faces[i].box[3] = 5 + 200;
  }
  const Image want = paste_faces(photo, faces, ts, kS, alpha);

  // The pipeline's sequence on the device (the small-face decision is made on the host).
  DeviceBuffer dphoto = upload(photo), cmask(size_t{kW} * kH * 4), cfaces(size_t{kW} * kH * 3);
  DeviceBuffer tmp(size_t{kS} * kS * 3), ef(size_t{kS} * kS * 3);
  cuda::paste_canvas_clear(cmask.as<float>(), cfaces.as<uint8_t>(), kW, kH, nullptr);
  for (size_t i = 0; i < faces.size(); ++i) {
    const PastedFace& f = faces[i];
    DeviceBuffer restored = upload(f.restored), crop = upload(f.crop);
    const uint8_t* cur = restored.as<uint8_t>();
    if (std::min(f.box[3] - f.box[1], f.box[2] - f.box[0]) < 100) {
      cuda::paste_smooth_face(cur, tmp.as<uint8_t>(), kS, nullptr);
      cur = tmp.as<uint8_t>();
    }
    cuda::paste_blend_faces(cur, crop.as<uint8_t>(), alpha, ef.as<uint8_t>(), kS, nullptr);
    cuda::paste_accumulate(ef.as<uint8_t>(), dmask.as<float>(), kS, ts[i], cmask.as<float>(), cfaces.as<uint8_t>(), kW,
                           kH, nullptr);
  }
  cuda::paste_composite(dphoto.as<uint8_t>(), cmask.as<float>(), cfaces.as<uint8_t>(), dphoto.as<uint8_t>(), kW, kH,
                        nullptr);
  CHECK(count_diff(dphoto.download<uint8_t>(want.bgr.size()), want.bgr) == 0);
}

TEST_CASE("cuda paste kernels reject bad arguments") {
  DeviceBuffer a(4096), b(4096);
  CHECK_THROWS_AS(cuda::paste_smooth_face(a.as<uint8_t>(), a.as<uint8_t>(), 8, nullptr), Error);
  CHECK_THROWS_AS(cuda::paste_smooth_face(a.as<uint8_t>(), b.as<uint8_t>(), 0, nullptr), Error);
  CHECK_THROWS_AS(cuda::paste_blend_faces(a.as<uint8_t>(), b.as<uint8_t>(), NAN, a.as<uint8_t>(), 8, nullptr), Error);
  CHECK_THROWS_AS(cuda::paste_canvas_clear(a.as<float>(), b.as<uint8_t>(), 0, 4, nullptr), Error);
  const AffineTransform singular{{0, 0, 1, 0, 0, 2}};
  CHECK_THROWS_AS(cuda::paste_accumulate(a.as<uint8_t>(), b.as<float>(), 4, singular, a.as<float>(), b.as<uint8_t>(), 8,
                                         8, nullptr),
                  Error);
  CHECK_THROWS_AS(cuda::paste_composite(a.as<uint8_t>(), nullptr, b.as<uint8_t>(), a.as<uint8_t>(), 8, 8, nullptr), Error);
  // A face mapped wholly outside the canvas queues nothing.
  const AffineTransform far{{1, 0, 500, 0, 1, 500}};
  cuda::paste_accumulate(a.as<uint8_t>(), b.as<float>(), 4, far, a.as<float>(), b.as<uint8_t>(), 8, 8, nullptr);
}
