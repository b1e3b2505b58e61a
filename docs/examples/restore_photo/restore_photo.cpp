// A program that restores the faces of one photo with the installed engine (docs/install.md):
// GPEN and RetinaFace from converted .gpw files (`gpen convert`), on the CPU, the photo's EXIF
// and ICC profile carried to the output. It writes the bytes `gpen restore --device cpu --batch 1`
// writes for the same photo and weights (tests/test_install.sh checks that).
// Usage: restore_photo GPEN.gpw RETINAFACE.gpw PHOTO OUT
#include <cstdio>
#include <exception>

#include "engine/core/version.h"
#include "engine/models/gpen_model.h"
#include "engine/models/retinaface.h"
#include "engine/photo/image.h"
#include "engine/photo/pipeline.h"
#include "engine/runtime/backend.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s GPEN.gpw RETINAFACE.gpw PHOTO OUT (gpen-engine %s)\n", argv[0], gpen::version());
    return 2;
  }
  try {
    // The models, each on its own CPU backend; GPEN's memory is planned when the restorer prepares it.
    auto backend = gpen::make_cpu_backend();
    auto gpen_model = gpen::GpenModel::open(argv[1], *backend, gpen::DType::f32);
    gpen::RetinaFaceDetector detector(argv[2], gpen::make_cpu_backend());

    gpen::RestoreOptions opt;  // the official flow's defaults: faces scoring 0.9 or more, full strength
    opt.batch = 1;
    gpen::FaceRestorer restorer(*gpen_model, detector, opt);

    gpen::ImageMeta meta;  // EXIF (orientation applied and reset) and ICC profile, for the output
    const gpen::Image photo = gpen::read_image(argv[3], {}, &meta);
    const gpen::PhotoResult r = restorer.process(photo);
    gpen::write_image(argv[4], r.image, 95, &meta);
    std::printf("%s: %zu faces found, %d restored -> %s\n", argv[3], r.faces.size(), r.restored, argv[4]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "restore_photo: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
