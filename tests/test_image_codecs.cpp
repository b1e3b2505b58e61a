// The JPEG/PNG/WebP decoders against cv2.imread(IMREAD_COLOR) on every flavour
// (tests/reference/make_codec_fixtures.py), EXIF orientation, metadata carried through writes,
// and the pixel limit read from headers.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/photo/exif.h"
#include "engine/photo/image.h"
#include "engine/photo/npy.h"

using namespace gpen;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(GPEN_FIXTURE_DIR) + "/image/codec/";
const std::string kShared = GPEN_SHARED_DIR;

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// Number of bytes that differ from the cv2.imread array (-1: other shape).
long differing(const Image& img, const std::string& npy_path) {
  npy::Array ref = npy::load(npy_path);
  if (ref.shape.size() != 3 || ref.shape[0] != img.height || ref.shape[1] != img.width || ref.shape[2] != 3) return -1;
  const uint8_t* r = ref.data<uint8_t>();
  long n = 0;
  for (size_t i = 0; i < img.bgr.size(); ++i) n += img.bgr[i] != r[i];
  return n;
}

uint32_t crc32(const std::vector<uint8_t>& v) {
  uint32_t table[256];
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  uint32_t c = 0xFFFFFFFFu;
  for (uint8_t b : v) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::string error_of(const std::vector<uint8_t>& b, const std::string& name, const ReadOptions& opt = {}) {
  try {
    decode_image(b.data(), b.size(), name, opt);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A small ICC profile that libpng accepts: header, the white point and a private tag of noise
// (libpng 1.6.39 reads iCCP chunks of under 92 bytes as "too short", so it must not compress well).
std::vector<uint8_t> tiny_icc() {
  std::vector<uint8_t> p(164 + 256, 0);
  auto put32 = [&](size_t at, uint32_t v) {
    for (int k = 0; k < 4; ++k) p[at + static_cast<size_t>(k)] = static_cast<uint8_t>(v >> (24 - 8 * k));
  };
  put32(0, static_cast<uint32_t>(p.size()));
  put32(8, 0x02100000);
  std::memcpy(&p[12], "mntr", 4);
  std::memcpy(&p[16], "RGB ", 4);
  std::memcpy(&p[20], "XYZ ", 4);
  std::memcpy(&p[36], "acsp", 4);
  put32(68, 0x0000F6D6);  // D50 illuminant, as the ICC specification requires
  put32(72, 0x00010000);
  put32(76, 0x0000D32D);
  put32(128, 2);  // tag table: 'wtpt' at 156 (20 bytes of XYZType), 'priv' at 176
  std::memcpy(&p[132], "wtpt", 4);
  put32(136, 156);
  put32(140, 20);
  std::memcpy(&p[144], "priv", 4);
  put32(148, 176);
  put32(152, static_cast<uint32_t>(p.size() - 176));
  std::memcpy(&p[156], "XYZ ", 4);
  put32(164, 0x0000F6D6);
  put32(168, 0x00010000);
  put32(172, 0x0000D32D);
  uint32_t r = 99;
  for (size_t i = 176; i < p.size(); ++i) p[i] = static_cast<uint8_t>((r = r * 1103515245u + 12345u) >> 24);
  return p;
}

}  // namespace

TEST_CASE("codecs: every JPEG, PNG and WebP flavour decodes to exactly cv2.imread's pixels") {
  int files = 0;
  for (const auto& e : fs::directory_iterator(kDir)) {
    const std::string f = e.path().filename().string();
    if (!(f.ends_with(".jpg") || f.ends_with(".png") || f.ends_with(".webp"))) continue;
    const Image img = read_image(e.path().string());
    CHECK_MESSAGE(differing(img, e.path().string() + ".bgr.npy") == 0, f);
    ++files;
  }
  CHECK(files >= 45);
}

TEST_CASE("codecs: the shared photos decode to exactly cv2.imread's pixels") {
  const nlohmann::json want = nlohmann::json::parse(std::ifstream(kDir + "shared.json"));
  REQUIRE(want.size() >= 8);
  for (const auto& [f, w] : want.items()) {
    const Image img = read_image(kShared + "/images/" + f);
    CHECK_MESSAGE(img.width == w["width"].get<int>(), f);
    CHECK_MESSAGE(img.height == w["height"].get<int>(), f);
    CHECK_MESSAGE(crc32(img.bgr) == w["crc32"].get<uint32_t>(), f);
  }
}

TEST_CASE("codecs: EXIF orientation is applied as cv2.imread does, or ignored on request") {
  ReadOptions raw;
  raw.apply_orientation = false;
  for (int k = 1; k <= 8; ++k) {
    const std::string f = kDir + "orient" + std::to_string(k) + ".jpg";
    ImageMeta meta;
    const Image up = read_image(f, {}, &meta);
    CHECK(meta.orientation == k);
    CHECK_MESSAGE(differing(up, f + ".bgr.npy") == 0, f);
    // The EXIF that goes to an output describes the upright pixels.
    CHECK(exif::orientation(meta.exif) == 1);
    CHECK_MESSAGE(differing(read_image(f, raw), f + ".raw.npy") == 0, f);
    ImageMeta kept;
    read_image(f, raw, &kept);
    CHECK(exif::orientation(kept.exif) == k);
  }
  // PNG's eXIf chunk is applied by OpenCV 4.6; a WebP's EXIF is not.
  ImageMeta pm, wm;
  CHECK(read_image(kDir + "orient6.png", {}, &pm).width == 37);
  CHECK(pm.orientation == 6);
  CHECK(read_image(kDir + "orient6.webp", {}, &wm).width == 45);
  CHECK(exif::orientation(wm.exif) == 6);
}

TEST_CASE("codecs: EXIF and ICC profile go from the input into JPEG, PNG and WebP outputs") {
  ImageMeta meta;
  const Image img = read_image(kDir + "orient6.jpg", {}, &meta);
  REQUIRE(!meta.exif.empty());
  meta.icc = tiny_icc();
  const fs::path dir = fs::temp_directory_path() / ("gpen_test_codecs_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const std::string ext : {"jpg", "png", "webp"}) {
    const std::string out = (dir / ("out." + ext)).string();
    write_image(out, img, 95, &meta);
    ImageMeta back;
    const Image b = read_image(out, {}, &back);
    CHECK_MESSAGE(b.width == img.width, ext);  // not rotated a second time
    CHECK_MESSAGE(back.exif == meta.exif, ext);
    CHECK_MESSAGE(back.icc == meta.icc, ext);
    CHECK(back.orientation == 1);
    if (ext != "jpg") CHECK_MESSAGE(b.bgr == img.bgr, ext);  // PNG and WebP are lossless
  }
  // Without metadata, outputs carry none.
  write_image((dir / "plain.jpg").string(), img);
  ImageMeta none;
  read_image((dir / "plain.jpg").string(), {}, &none);
  CHECK(none.exif.empty());
  CHECK(none.icc.empty());
  fs::remove_all(dir);
}

TEST_CASE("codecs: JPEG output is byte for byte what cv2.imwrite writes") {
  const Image img = read_image(kDir + "png_rgb8.png");
  CHECK(encode_image("jpg", img) == read_bytes(kDir + "cv2_imwrite_q95.jpg"));
  CHECK(encode_image("JPEG", img, 70) == read_bytes(kDir + "cv2_imwrite_q70.jpg"));
}

TEST_CASE("codecs: the pixel limit is checked from the header, before decoding") {
  for (const char* f : {"jpeg_420.jpg", "jpeg_progressive_420.jpg", "png_rgb8.png", "png_interlaced_rgb8.png", "webp_lossy.webp",
                        "webp_lossless.webp"}) {
    const std::vector<uint8_t> b = read_bytes(kDir + f);
    ReadOptions tight;
    tight.max_pixels = 45 * 37 - 1;
    const std::string msg = error_of(b, f, tight);
    CHECK_MESSAGE(msg.find("45x37 pixels is over the limit (1664 pixels") != std::string::npos, msg);
    tight.max_pixels = 45 * 37;
    CHECK_MESSAGE(error_of(b, f, tight).empty(), f);
  }
  // A 30 000 x 30 000 JPEG header on a 1 kB file: refused for its size, not decoded from nothing.
  std::vector<uint8_t> j = read_bytes(kDir + "jpeg_420.jpg");
  for (size_t i = 0; i + 8 < j.size(); ++i)
    if (j[i] == 0xFF && j[i + 1] == 0xC0) {
      j[i + 5] = 0x75, j[i + 6] = 0x30, j[i + 7] = 0x75, j[i + 8] = 0x30;
      break;
    }
  const std::string msg = error_of(j, "big.jpg");
  CHECK_MESSAGE(msg.find("big.jpg: image of 30000x30000 pixels is over the limit") == 0, msg);
}

TEST_CASE("codecs: a PNG claiming more than its bytes can hold is refused before allocating for it") {
  // png_rgb8.png's IHDR set to 4000 x 4000 (48 MB of pixels) on a file of a few kB: deflate cannot
  // expand that much (at most 1032-fold), so the image data must run out; refused before any pixel
  // memory, under the pixel limit or not.
  std::vector<uint8_t> p = read_bytes(kDir + "png_rgb8.png");
  REQUIRE(p.size() < 20000);
  for (int k = 0; k < 2; ++k) p[16 + 4 * k] = 0, p[17 + 4 * k] = 0, p[18 + 4 * k] = 0x0F, p[19 + 4 * k] = 0xA0;
  const uint32_t c = crc32(std::vector<uint8_t>(p.begin() + 12, p.begin() + 29));
  for (int k = 0; k < 4; ++k) p[29 + k] = static_cast<uint8_t>(c >> (24 - 8 * k));
  const std::string msg = error_of(p, "claims.png");
  CHECK_MESSAGE(msg.find("claims.png: corrupt PNG (") == 0, msg);
  CHECK_MESSAGE(msg.find("bytes of image data cannot hold the 4000x4000 pixels of its header)") != std::string::npos, msg);
  // A chunk whose length runs past the end of the file: refused before libpng allocates for it.
  std::vector<uint8_t> q = read_bytes(kDir + "png_rgb8.png");
  q[33] = 0x00, q[34] = 0x7F, q[35] = 0xFF, q[36] = 0xFF;  // the length of the chunk after IHDR: 8 MB
  CHECK(error_of(q, "long.png") == "long.png: truncated PNG (a chunk runs past the end of the file)");
  q = read_bytes(kDir + "png_rgb8.png");
  q.resize(q.size() - 12);  // no IEND
  CHECK(error_of(q, "noend.png") == "noend.png: truncated PNG (a chunk runs past the end of the file)");
  // A large image that compresses well is not refused: 2000 x 2000 of one grey, a few kB of PNG.
  Image flat;
  flat.width = flat.height = 2000;
  flat.bgr.assign(flat.pixels() * 3, 77);
  const std::vector<uint8_t> f = encode_image("png", flat);
  CHECK(f.size() * 100 < flat.bgr.size());
  const Image back = decode_image(f.data(), f.size(), "flat.png");
  CHECK(back.width == 2000);
  CHECK(back.bgr == flat.bgr);
}

TEST_CASE("codecs: a progressive JPEG of more than 500 scans is refused") {
  // jpeg_444.jpg re-coded by jpegtran as DC + one AC scan per component; its DC scan (Ah = Al = 0)
  // may legally be repeated, and each repetition is another full pass for the decoder.
  const std::vector<uint8_t> p = read_bytes(kDir + "jpeg_progressive_4scans.jpg");
  REQUIRE(p.size() > 200);
  size_t sos = 0, end = 0;
  for (size_t i = 2; i + 1 < p.size(); ++i)
    if (p[i] == 0xFF && p[i + 1] == 0xDA) {
      sos = i;
      break;
    }
  REQUIRE(sos > 0);
  for (size_t i = sos + 2; i + 1 < p.size(); ++i)
    if (p[i] == 0xFF && p[i + 1] != 0x00 && !(p[i + 1] >= 0xD0 && p[i + 1] <= 0xD7)) {
      end = i;
      break;
    }
  REQUIRE(end > sos);
  auto repeated = [&](int n) {
    std::vector<uint8_t> v(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(end));
    for (int k = 0; k < n; ++k) v.insert(v.end(), p.begin() + static_cast<std::ptrdiff_t>(sos), p.begin() + static_cast<std::ptrdiff_t>(end));
    v.insert(v.end(), p.begin() + static_cast<std::ptrdiff_t>(end), p.end());
    return v;
  };
  const std::vector<uint8_t> ok = repeated(400), bad = repeated(600);
  const Image a = decode_image(ok.data(), ok.size(), "ok.jpg");
  CHECK(differing(a, kDir + "jpeg_progressive_4scans.jpg.bgr.npy") == 0);  // the repeats change nothing
  CHECK(error_of(bad, "bad.jpg") == "bad.jpg: corrupt JPEG (libjpeg: more than 500 scans)");
}

TEST_CASE("codecs: damaged files are refused with the library's reason") {
  auto cut = [](std::vector<uint8_t> v, size_t n) {
    v.resize(n);
    return v;
  };
  const std::vector<uint8_t> arith = read_bytes(kDir + "jpeg_arithmetic.jpg");
  const std::vector<uint8_t> rst = read_bytes(kDir + "jpeg_restart.jpg");
  const std::vector<uint8_t> lossy = read_bytes(kDir + "webp_lossy.webp");
  const std::vector<uint8_t> lossless = read_bytes(kDir + "webp_lossless.webp");
  CHECK(error_of(cut(arith, arith.size() - 40), "a.jpg").find("a.jpg: truncated JPEG (libjpeg: Premature end of JPEG file)") == 0);
  CHECK(error_of(cut(rst, rst.size() / 2), "r.jpg").find("r.jpg: truncated JPEG (libjpeg: ") == 0);
  CHECK(error_of(cut(lossy, lossy.size() - 30), "l.webp").find("l.webp: truncated WebP") == 0);
  CHECK(error_of(cut(lossless, lossless.size() / 2), "ll.webp").find("ll.webp: truncated WebP") == 0);
  std::vector<uint8_t> bad = lossy;
  bad[12] = 'X';  // chunk tag "VP8 " -> "XP8 "
  CHECK(error_of(bad, "b.webp").find("b.webp: corrupt WebP") == 0);
  // A damaged marker in the middle of a JPEG header (stray bytes) is refused, not skipped over.
  std::vector<uint8_t> stray = read_bytes(kDir + "jpeg_444.jpg");
  stray[2 + 2 + (stray[4] << 8 | stray[5]) + 1] = 0x00;  // the marker after APP0
  CHECK(error_of(stray, "s.jpg").find("s.jpg: corrupt JPEG (libjpeg: Corrupt JPEG data: ") == 0);
}

TEST_CASE("codecs: mutated files decode or fail cleanly (never crash)") {
  // Deterministic byte flips and truncations of each flavour; under ASan this checks that no
  // damaged input makes a decoder read or write out of bounds.
  uint32_t state = 2024;
  auto rnd = [&state] {
    state = state * 1664525u + 1013904223u;
    return state >> 8;
  };
  int decoded = 0, rejected = 0;
  for (const auto& e : fs::directory_iterator(kDir)) {
    const std::string f = e.path().filename().string();
    if (!(f.ends_with(".jpg") || f.ends_with(".png") || f.ends_with(".webp"))) continue;
    const std::vector<uint8_t> orig = read_bytes(e.path().string());
    for (int k = 0; k < 40; ++k) {
      std::vector<uint8_t> b = orig;
      const int flips = 1 + static_cast<int>(rnd() % 4);
      for (int j = 0; j < flips; ++j) b[rnd() % b.size()] ^= static_cast<uint8_t>(1 + rnd() % 255);
      if (k % 3 == 0) b.resize(b.size() - rnd() % (b.size() / 2));
      try {
        const Image img = decode_image(b.data(), b.size(), f);
        CHECK(img.bgr.size() == img.pixels() * 3);
        ++decoded;
      } catch (const Error& err) {
        CHECK(std::string(err.what()).find(f) == 0);
        ++rejected;
      }
    }
  }
  MESSAGE("mutated images: " << decoded << " decoded, " << rejected << " rejected");
  CHECK(rejected > 0);
}
