// gpen detect: RetinaFace face detection (boxes, scores, 5 landmarks) on image files.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/cli.h"
#include "apps/detect_json.h"
#include "apps/image_options.h"
#include "engine/runtime/device.h"
#include "engine/photo/image.h"
#include "engine/models/retinaface.h"

namespace gpen::cli {
namespace {

struct DetectArgs {
  std::string model;
  std::vector<std::string> images;
  std::string device = "auto";
  std::string precision = "fp32";
  float threshold = 0.9f;
  float nms = 0.4f;
  int det_max_side = -1;  // -1: GPEN's rule (> 1500 -> 1000)
  bool json = false;
  bool time = false;
  std::string draw_dir;
  int64_t max_pixels = kMaxImagePixels;
  bool ignore_orientation = false;
};

void put(Image& img, int x, int y, const uint8_t bgr[3]) {
  if (x < 0 || y < 0 || x >= img.width || y >= img.height) return;
  uint8_t* p = img.bgr.data() + (static_cast<size_t>(y) * static_cast<size_t>(img.width) + static_cast<size_t>(x)) * 3;
  p[0] = bgr[0], p[1] = bgr[1], p[2] = bgr[2];
}

// Boxes in green, landmarks as dots (eyes red/blue, nose green... as the official demo colours them).
void draw_faces(Image& img, const std::vector<Face>& faces) {
  const int t = std::max(1, std::min(img.width, img.height) / 400);
  const uint8_t green[3] = {0, 255, 0};
  const uint8_t colors[5][3] = {{0, 0, 255}, {255, 255, 0}, {255, 0, 255}, {0, 255, 0}, {255, 0, 0}};
  const auto sane = [](float v) { return std::isfinite(v) && std::fabs(v) < 1e6f; };
  for (const Face& f : faces) {
    bool ok = true;
    for (float v : f.box) ok = ok && sane(v);
    for (float v : f.landmarks) ok = ok && sane(v);
    if (!ok) continue;  // nothing sensible to draw
    const int x1 = static_cast<int>(std::lround(f.box[0])), y1 = static_cast<int>(std::lround(f.box[1]));
    const int x2 = static_cast<int>(std::lround(f.box[2])), y2 = static_cast<int>(std::lround(f.box[3]));
    if (std::max(x2 - x1, y2 - y1) > 4 * std::max(img.width, img.height)) continue;  // absurd box: skip
    for (int k = 0; k < t; ++k) {
      for (int x = x1; x <= x2; ++x) put(img, x, y1 + k, green), put(img, x, y2 - k, green);
      for (int y = y1; y <= y2; ++y) put(img, x1 + k, y, green), put(img, x2 - k, y, green);
    }
    const int r = 2 * t;
    for (int j = 0; j < 5; ++j) {
      const int cx = static_cast<int>(std::lround(f.landmarks[2 * j])), cy = static_cast<int>(std::lround(f.landmarks[2 * j + 1]));
      for (int dy = -r; dy <= r; ++dy)
        for (int dx = -r; dx <= r; ++dx)
          if (dx * dx + dy * dy <= r * r) put(img, cx + dx, cy + dy, colors[j]);
    }
  }
}

void run_detect(const DetectArgs& a) {
  DeviceOptions dopt;
  dopt.kind = parse_device(a.device);
  GPEN_CHECK(parse_precision(a.precision) == DType::f32,
             "--precision " + a.precision + ": RetinaFace runs in fp32 on every device (16-bit precision is for GPEN)");
  GPEN_CHECK(a.threshold >= 0 && a.threshold < 1, "--threshold must be in [0, 1)");
  GPEN_CHECK(a.nms > 0 && a.nms <= 1, "--nms must be in (0, 1]");
  GPEN_CHECK(a.det_max_side >= -1, "--det-max-side must be >= 0");
  RetinaFaceDetector det(a.model, make_backend(dopt));
  DetectOptions opt;
  opt.post.threshold = a.threshold;
  opt.post.nms = a.nms;
  if (a.det_max_side >= 0) opt.max_side = opt.target_side = a.det_max_side;
  if (!a.draw_dir.empty()) std::filesystem::create_directories(a.draw_dir);

  int failed = 0;
  for (const std::string& path : a.images) {
    try {
      Image img = read_image(path, read_options(a.max_pixels, a.ignore_orientation));
      auto t0 = std::chrono::steady_clock::now();
      std::vector<Face> faces = det.detect(img, opt);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (a.json) {
        nlohmann::ordered_json j = detect_json(path, img.width, img.height, faces);
        if (a.time) j["ms"] = ms;
        std::cout << j.dump() << "\n";
      } else {
        std::printf("%s: %dx%d, %zu face%s", path.c_str(), img.width, img.height, faces.size(),
                    faces.size() == 1 ? "" : "s");
        if (a.time) std::printf(" (%.1f ms)", ms);
        std::printf("\n");
        for (const Face& f : faces) {
          std::printf("  score %.4f  box %.1f %.1f %.1f %.1f  landmarks", f.score, f.box[0], f.box[1], f.box[2],
                      f.box[3]);
          for (float v : f.landmarks) std::printf(" %.1f", v);
          std::printf("\n");
        }
      }
      if (!a.draw_dir.empty()) {
        draw_faces(img, faces);
        const std::string out =
            (std::filesystem::path(a.draw_dir) / (std::filesystem::path(path).stem().string() + ".png")).string();
        write_image(out, img);
      }
    } catch (const Error& e) {
      std::fprintf(stderr, "gpen: error: %s\n", e.what());
      ++failed;
    }
  }
  std::cout.flush();
  GPEN_CHECK(failed == 0, std::to_string(failed) + " of " + std::to_string(a.images.size()) + " images failed");
}

DetectArgs g_args;

Command reg(
    "detect", "Detect faces (box, score, 5 landmarks) with RetinaFace",
    [](CLI::App& sub) {
      sub.add_option("-d,--detector", g_args.model, "RetinaFace weights (.gpw from gpen convert)")->required();
      sub.add_option("images", g_args.images, "Image files (JPEG, PNG, WebP, BMP)")->required();
      sub.add_option("--device", g_args.device, "cpu, cuda or auto (CUDA when a GPU is present)")->capture_default_str();
      sub.add_option("--precision", g_args.precision, "fp32 (the detector always runs in fp32)")->capture_default_str();
      sub.add_option("--threshold", g_args.threshold, "Keep faces with score > threshold")->capture_default_str();
      sub.add_option("--nms", g_args.nms, "NMS IoU threshold")->capture_default_str();
      sub.add_option("--det-max-side", g_args.det_max_side,
                     "Shrink images whose longer side exceeds N to N (0: never; default: > 1500 -> 1000)");
      sub.add_flag("--json", g_args.json, "One JSON object per image");
      sub.add_flag("--time", g_args.time, "Report the detection time per image");
      sub.add_option("--draw", g_args.draw_dir, "Write each image with boxes and landmarks drawn (PNG) into this folder");
      add_image_read_options(sub, g_args.max_pixels, g_args.ignore_orientation);
      sub.callback([] { run_detect(g_args); });
    },
    30);

}  // namespace
}  // namespace gpen::cli
