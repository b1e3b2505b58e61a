// A program that restores the faces of one photo with the installed engine (docs/install.md):
// GPEN and RetinaFace from converted .gpw files (`gpen convert`), on the CPU, the photo's EXIF
// and ICC profile carried to the output. It writes the bytes `gpen restore --device cpu --batch 1`
// writes for the same photo and weights (tests/test_install.sh checks that).
// Usage: restore_photo GPEN.gpw RETINAFACE.gpw PHOTO OUT
#include <cstdio>
#include <exception>

#include "engine/core/version.h"
#include "engine/photo/image.h"
#include "engine/photo/restorer.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s GPEN.gpw RETINAFACE.gpw PHOTO OUT (gpen-engine %s)\n", argv[0], gpen::version());
    return 2;
  }
  try {
    // The restore setup `gpen restore` uses: models opened, memory planned, the plan reported.
    gpen::RestoreConfig config;  // the official flow's defaults: faces scoring 0.9 or more, full strength
    config.model = argv[1];
    config.detector = argv[2];
    config.device = gpen::DeviceKind::cpu;
    config.batch = 1;
    auto restorer = gpen::Restorer::open(config);

    gpen::ImageMeta meta;  // EXIF (orientation applied and reset) and ICC profile, for the output
    const gpen::Image photo = gpen::read_image(argv[3], {}, &meta);
    const gpen::RestoreResult r = restorer->restore(photo);
    gpen::write_image(argv[4], r.image, 95, &meta);
    std::printf("%s: %zu faces found, %d restored -> %s\n", argv[3], r.faces.size(), r.restored, argv[4]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "restore_photo: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
