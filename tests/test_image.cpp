// Image decode/encode against OpenCV (tests/reference/make_image_fixtures.py), damaged and
// unsupported files, atomic writes, and cv2-compatible bilinear resizing.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "kernels/cpu/image_resize.h"
#include "engine/core/error.h"
#include "engine/photo/image.h"
#include "engine/photo/npy.h"

using namespace gpen;
namespace fs = std::filesystem;

namespace {

const std::string kImg = std::string(GPEN_FIXTURE_DIR) + "/image/";
const std::string kShared = GPEN_SHARED_DIR;

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

struct TempDir {
  fs::path p;
  TempDir() {
    p = fs::temp_directory_path() / ("gpen_test_image_" + std::to_string(::getpid()));
    fs::create_directories(p);
  }
  ~TempDir() { fs::remove_all(p); }
  std::string file(const std::string& n) const { return (p / n).string(); }
  std::string write(const std::string& n, const std::vector<uint8_t>& b) const {
    std::ofstream(file(n), std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    return file(n);
  }
};

// Largest per-byte difference to cv2.imread's BGR array.
int max_diff_to_cv2(const Image& img, const std::string& npy_path) {
  npy::Array ref = npy::load(npy_path);
  REQUIRE(ref.shape.size() == 3);
  REQUIRE(ref.shape[0] == img.height);
  REQUIRE(ref.shape[1] == img.width);
  const uint8_t* r = ref.data<uint8_t>();
  int d = 0;
  for (size_t i = 0; i < img.bgr.size(); ++i) d = std::max(d, std::abs(int(img.bgr[i]) - int(r[i])));
  return d;
}

std::string error_of(const std::string& path) {
  try {
    read_image(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("image: lossless formats decode exactly as cv2.imread(IMREAD_COLOR)") {
  for (const char* f : {"rgb8.png", "gray8.png", "rgba8.png", "rgb16.png", "bgr24.bmp", "bgra32.bmp"}) {
    Image img = read_image(kImg + f);
    CHECK(img.width == 37);
    CHECK(img.height == 23);
    CHECK_MESSAGE(max_diff_to_cv2(img, kImg + f + ".bgr.npy") == 0, f);
  }
}

TEST_CASE("image: JPEG (baseline and progressive) decodes exactly as cv2.imread") {
  // Same library (libjpeg-turbo) and settings as OpenCV: every flavour is in test_image_codecs.
  for (const char* f : {"baseline.jpg", "progressive.jpg"}) {
    Image img = read_image(kImg + f);
    CHECK(img.width == 37);
    CHECK_MESSAGE(max_diff_to_cv2(img, kImg + f + ".bgr.npy") == 0, f);
  }
  // The shared photos: a progressive JPEG and an RGBA PNG among them.
  Image crowd = read_image(kShared + "/images/crowd_1600x898.jpg");
  CHECK(crowd.width == 1600);
  CHECK(crowd.height == 898);
  Image solvay = read_image(kShared + "/images/solvay_1927.png");
  CHECK(solvay.width == 1328);
  CHECK(solvay.height == 568);
  CHECK(solvay.bgr.size() == size_t{1328} * 568 * 3);
}

TEST_CASE("image: damaged, unsupported and missing files are errors naming the path") {
  TempDir t;
  const std::vector<uint8_t> jpg = read_bytes(kShared + "/images/kids_1024x768.jpg");
  const std::vector<uint8_t> prog = read_bytes(kImg + "progressive.jpg");
  const std::vector<uint8_t> png = read_bytes(kImg + "rgb8.png");
  const std::vector<uint8_t> bmp = read_bytes(kImg + "bgr24.bmp");
  REQUIRE(jpg.size() > 1000);
  auto cut = [](const std::vector<uint8_t>& v, size_t n) { return std::vector<uint8_t>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n)); };

  struct Case {
    std::string name;
    std::vector<uint8_t> bytes;
    const char* expect;
  };
  std::vector<uint8_t> corrupt_png = png;
  for (size_t i = 60; i < 200; ++i) corrupt_png[i] ^= 0x5A;  // inside the IDAT stream
  std::vector<uint8_t> corrupt_jpg = jpg;
  corrupt_jpg[3] = 0x00;  // first marker is no marker
  // A Huffman table declaring more than 256 codes.
  std::vector<uint8_t> bad_dht = prog;
  for (size_t i = 0; i + 1 < bad_dht.size(); ++i)
    if (bad_dht[i] == 0xFF && bad_dht[i + 1] == 0xC4) {
      bad_dht[i + 5 + 14] = 200;
      bad_dht[i + 5 + 15] = 200;
      break;
    }
  const std::vector<Case> cases = {
      {"bad_dht.jpg", bad_dht, "Huffman table"},
      {"half.jpg", cut(jpg, jpg.size() / 2), "truncated JPEG"},
      {"nohead.jpg", cut(jpg, 300), "truncated JPEG"},
      {"prog_cut.jpg", cut(prog, prog.size() - 10), "truncated JPEG"},
      {"cut.png", cut(png, png.size() / 2), "truncated PNG"},
      {"noend.png", cut(png, png.size() - 12), "truncated PNG"},
      {"cut.bmp", cut(bmp, bmp.size() - 100), "truncated BMP"},
      {"corrupt.png", corrupt_png, "corrupt PNG"},
      {"corrupt.jpg", corrupt_jpg, "corrupt JPEG"},
      {"empty.png", {}, "empty file"},
      {"anim.gif", {'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0, 0, 0, 0}, "unsupported image format"},
      {"text.jpg", {'h', 'e', 'l', 'l', 'o'}, "unsupported image format"},
  };
  for (const Case& c : cases) {
    const std::string path = t.write(c.name, c.bytes);
    const std::string msg = error_of(path);
    CHECK_MESSAGE(msg.find(path) != std::string::npos, c.name << ": '" << msg << "'");
    CHECK_MESSAGE(msg.find(c.expect) != std::string::npos, c.name << ": '" << msg << "'");
  }
  CHECK(error_of(t.file("missing.png")).find("missing.png: no such file") != std::string::npos);
  CHECK(error_of(t.p.string()).find("not a regular file") != std::string::npos);
  // A huge declared size is refused before anything is allocated.
  std::vector<uint8_t> big = png;
  big[16] = 0x7F;  // IHDR width high byte
  const std::string msg = error_of(t.write("huge.png", big));
  CHECK(msg.find("huge.png") != std::string::npos);
}

TEST_CASE("image: PNG round trip is exact, JPEG close, writes are atomic") {
  TempDir t;
  Image img;
  img.width = 31;
  img.height = 17;
  img.bgr.resize(img.pixels() * 3);
  for (size_t i = 0; i < img.bgr.size(); ++i) img.bgr[i] = static_cast<uint8_t>((i * 7 + i / 93) % 256);
  const std::string png = t.file("out.png");
  write_image(png, img);
  Image back = read_image(png);
  CHECK(back.width == 31);
  CHECK(back.height == 17);
  CHECK(back.bgr == img.bgr);
  // Overwrite in place: a second write replaces the file, no temporary is left behind.
  write_image(png, back);
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(t.p)) n += e.is_regular_file();
  CHECK(n == 1);

  Image smooth;
  smooth.width = 40;
  smooth.height = 30;
  smooth.bgr.resize(smooth.pixels() * 3);
  for (int y = 0; y < 30; ++y)
    for (int x = 0; x < 40; ++x)
      for (int c = 0; c < 3; ++c) smooth.bgr[(static_cast<size_t>(y) * 40 + x) * 3 + c] = static_cast<uint8_t>(x * 4 + y * 2 + c * 30);
  const std::string jpg = t.file("out.JPG");
  write_image(jpg, smooth, 95);
  Image j = read_image(jpg);
  double err = 0;
  for (size_t i = 0; i < j.bgr.size(); ++i) err += std::abs(int(j.bgr[i]) - int(smooth.bgr[i]));
  CHECK(err / static_cast<double>(j.bgr.size()) < 3.0);

  // WebP is written lossless.
  const std::string webp = t.file("out.webp");
  write_image(webp, img);
  CHECK(read_image(webp).bgr == img.bgr);

  CHECK_THROWS_AS(write_image(t.file("out.tiff"), img), Error);
  CHECK_THROWS_AS(write_image(t.file("nodir/out.png"), img), Error);
}

TEST_CASE("image: bilinear resize matches cv2.resize INTER_LINEAR") {
  npy::Array src = npy::load(kImg + "resize_src_f32.npy");
  const int sh = static_cast<int>(src.shape[0]), sw = static_cast<int>(src.shape[1]);
  struct FCase {
    const char* file;
    double f;
  };
  for (const FCase& c : {FCase{"resize_f32_fx0.37.npy", 0.37}, FCase{"resize_f32_to_64x50.npy", 0},
                         FCase{"resize_f32_to_20x13.npy", 0}}) {
    npy::Array ref = npy::load(kImg + c.file);
    const int dh = static_cast<int>(ref.shape[0]), dw = static_cast<int>(ref.shape[1]);
    std::vector<float> out(static_cast<size_t>(dw) * dh * 3);
    resize_bilinear_f32(src.data<float>(), sw, sh, 3, out.data(), dw, dh, c.f, c.f);
    float err = 0;
    for (size_t i = 0; i < out.size(); ++i) err = std::max(err, std::fabs(out[i] - ref.data<float>()[i]));
    // Same weights and order as OpenCV; only FMA contraction may differ (values up to 255).
    CHECK_MESSAGE(err <= 1e-3f, c.file << ": " << err);
  }
  npy::Array s8 = npy::load(kImg + "resize_src_u8.npy");
  Image img;
  img.height = static_cast<int>(s8.shape[0]);
  img.width = static_cast<int>(s8.shape[1]);
  img.bgr.assign(s8.data<uint8_t>(), s8.data<uint8_t>() + s8.numel());
  for (const char* f : {"resize_u8_to_50x31.npy", "resize_u8_to_16x11.npy"}) {
    npy::Array ref = npy::load(kImg + f);
    Image r = resize_bilinear(img, static_cast<int>(ref.shape[1]), static_cast<int>(ref.shape[0]));
    int d = 0;
    for (size_t i = 0; i < r.bgr.size(); ++i) d = std::max(d, std::abs(int(r.bgr[i]) - int(ref.data<uint8_t>()[i])));
    CHECK_MESSAGE(d <= 1, f << ": " << d);
  }
  CHECK_THROWS_AS(resize_bilinear(img, 0, 10), Error);
}

TEST_CASE("image: mutated files decode or fail cleanly (never crash)") {
  // Deterministic byte flips and truncations of every small fixture; under ASan this checks that
  // no damaged input reads or writes out of bounds.
  uint32_t state = 12345;
  auto rnd = [&state] {
    state = state * 1664525u + 1013904223u;
    return state >> 8;
  };
  int decoded = 0, rejected = 0;
  for (const char* f : {"rgb8.png", "rgba8.png", "rgb16.png", "bgr24.bmp", "bgra32.bmp", "baseline.jpg", "progressive.jpg",
                        "codec/webp_lossy.webp", "codec/webp_lossless_alpha.webp"}) {
    const std::vector<uint8_t> orig = read_bytes(kImg + f);
    REQUIRE(!orig.empty());
    for (int k = 0; k < 150; ++k) {
      std::vector<uint8_t> b = orig;
      const int flips = 1 + static_cast<int>(rnd() % 4);
      for (int j = 0; j < flips; ++j) b[rnd() % b.size()] ^= static_cast<uint8_t>(1 + rnd() % 255);
      if (k % 3 == 0) b.resize(b.size() - rnd() % (b.size() / 2));
      try {
        Image img = decode_image(b.data(), b.size(), f);
        CHECK(img.bgr.size() == img.pixels() * 3);
        ++decoded;
      } catch (const Error& e) {
        CHECK(std::string(e.what()).find(f) != std::string::npos);
        ++rejected;
      }
    }
  }
  MESSAGE("mutated images: " << decoded << " decoded, " << rejected << " rejected");
  CHECK(rejected > 0);
}
