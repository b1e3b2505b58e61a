// .gpw writer/reader: round trips, atomic writes, and a corrupt or hostile header always being a
// one-line gpen::Error (never a crash or an absurd allocation).
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "engine/core/error.h"
#include "weights/gpw.h"
#include "weights/gpw_format.h"
#include "weights/gpw_writer.h"
#include "weights/half.h"

namespace fs = std::filesystem;
using namespace gpen;

namespace {

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("gpen_test_weights_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

std::vector<uint8_t> slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

GpwWriter sample_writer() {
  GpwWriter w("gpen", {{"size", 16}, {"channel_multiplier", 2}, {"narrow", 0.5}});
  std::vector<float> a(6);
  for (int i = 0; i < 6; ++i) a[i] = 0.5f * static_cast<float>(i) - 1.0f;
  w.add_f32("a.weight", DType::f32, Shape{2, 3}, a.data());
  w.add_f32("a.half", DType::f16, Shape{6}, a.data());
  w.add_f32("a.bf", DType::bf16, Shape{3, 2}, a.data());
  int32_t ints[3] = {7, -8, 9};
  w.add_copy("ints", DType::i32, Shape{3}, ints);
  w.add("empty", DType::f32, Shape{0, 4}, [](void*, size_t) { FAIL("filler of an empty tensor called"); });
  w.add("filled", DType::u8, Shape{1000}, [](void* dst, size_t n) { std::memset(dst, 0xab, n); });
  return w;
}

// A .gpw image with an arbitrary header text (CRC made right) and `data` bytes of zeros.
std::vector<uint8_t> image_with_header(const std::string& header, uint64_t data = 512) {
  gpw::Preamble p{};
  std::memcpy(p.magic, gpw::kMagic, 4);
  p.version = gpw::kVersion;
  p.header_offset = 64;
  p.header_bytes = header.size();
  p.data_offset = gpw::align_up(64 + header.size());
  p.data_bytes = data;
  p.header_crc32 = gpw::crc32(header.data(), header.size());
  std::vector<uint8_t> img(p.data_offset + data, 0);
  std::memcpy(img.data(), &p, sizeof p);
  std::memcpy(img.data() + 64, header.data(), header.size());
  return img;
}

std::string header_with_tensor(const std::string& tensor_json) {
  return R"({"format":"gpw","version":1,"arch":"gpen","config":{},"storage_dtype":"f32","tensors":[)" + tensor_json +
         "]}";
}

}  // namespace

TEST_CASE("gpw: write then read back every dtype, 256-byte aligned, views into the mapping") {
  fs::path p = temp_dir() / "roundtrip.gpw";
  GpwWriter w = sample_writer();
  w.set_storage_dtype(DType::f16);
  w.set_meta("source", {{"format", "test"}});
  w.write(p.string());
  CHECK(fs::file_size(p) == w.file_bytes());
  GpwFile f = GpwFile::open(p.string());
  CHECK(f.arch() == "gpen");
  CHECK(f.config()["size"] == 16);
  CHECK(f.config()["narrow"].get<double>() == 0.5);
  CHECK(f.storage_dtype() == DType::f16);
  CHECK(f.header()["source"]["format"] == "test");
  REQUIRE(f.size() == 6);
  CHECK(f.tensors()[0].name == "a.weight");  // file order is declaration order
  CHECK(f.parameter_count() == 6 + 6 + 6 + 3 + 0 + 1000);
  const TensorView* a = f.find("a.weight");
  REQUIRE(a);
  CHECK(a->dtype == DType::f32);
  CHECK(a->shape == Shape{2, 3});
  CHECK(a->contiguous());
  CHECK(reinterpret_cast<uintptr_t>(a->data) % 256 == 0);
  for (int i = 0; i < 6; ++i) CHECK(a->f32()[i] == 0.5f * i - 1.0f);
  const TensorView& h = f.at("a.half");
  CHECK(h.dtype == DType::f16);
  for (int i = 0; i < 6; ++i) CHECK(f16_to_f32(h.as<uint16_t>()[i]) == 0.5f * i - 1.0f);
  const TensorView& b = f.require("a.bf", Shape{3, 2});
  for (int i = 0; i < 6; ++i) CHECK(bf16_to_f32(b.as<uint16_t>()[i]) == 0.5f * i - 1.0f);
  CHECK(f.at("ints").as<int32_t>()[1] == -8);
  CHECK(f.at("empty").numel() == 0);
  CHECK(f.at("filled").as<uint8_t>()[999] == 0xab);
  for (const auto& e : f.tensors()) CHECK(reinterpret_cast<uintptr_t>(e.view.data) % 256 == 0);
  CHECK(f.find("nope") == nullptr);
  CHECK_THROWS_AS(f.at("nope"), Error);
  CHECK_THROWS_WITH_AS(f.require("a.bf", Shape{2, 3}), doctest::Contains("expected [2, 3]"), Error);
  CHECK(GpwFile::has_magic(p.string()));
  // Moving keeps the views valid.
  GpwFile g = std::move(f);
  CHECK(g.at("a.weight").f32()[5] == 1.5f);
}

TEST_CASE("gpw: drop_pages lets a copied tensor's pages go and they read back the same") {
  fs::path p = temp_dir() / "drop.gpw";
  GpwWriter w("gpen", {{"size", 16}});
  std::vector<float> big(3 * 4096 + 5);  // spans whole pages and partial ones at both ends
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i) * 0.25f;
  w.add_f32("big", DType::f32, Shape{static_cast<int64_t>(big.size())}, big.data());
  w.write(p.string());
  GpwFile f = GpwFile::open(p.string());
  const TensorView& v = f.at("big");
  std::vector<float> copy(v.f32(), v.f32() + big.size());
  f.drop_pages(v.data, copy.size() * 4);
  f.drop_pages(v.data, 0);
  f.drop_pages(&big[0], 64);  // not in the mapping: nothing happens
  CHECK(std::memcmp(v.f32(), big.data(), big.size() * 4) == 0);  // refaulted from the file
  CHECK(copy == big);
  GpwFile m = GpwFile::from_memory(slurp(p).data(), fs::file_size(p));
  m.drop_pages(m.at("big").data, big.size() * 4);  // a copy in memory: nothing to drop
  CHECK(m.at("big").f32()[12000] == 3000.0f);
}

TEST_CASE("gpw: a failing write leaves no output and no temporary file") {
  fs::path d = temp_dir() / "atomic";
  fs::remove_all(d);
  fs::create_directories(d);
  GpwWriter w("gpen", nlohmann::json::object());
  float x[4] = {1, 2, 3, 4};
  w.add_f32("x", DType::f32, Shape{4}, x);
  w.add("boom", DType::f32, Shape{4}, [](void*, size_t) { throw Error("source tensor vanished"); });
  CHECK_THROWS_WITH_AS(w.write((d / "out.gpw").string()), "source tensor vanished", Error);
  CHECK(fs::is_empty(d));
  // An existing file is replaced only on success.
  { std::ofstream(d / "out.gpw") << "old"; }
  CHECK_THROWS_AS(w.write((d / "out.gpw").string()), Error);
  CHECK(slurp(d / "out.gpw").size() == 3);
  CHECK(std::distance(fs::directory_iterator(d), fs::directory_iterator()) == 1);
  // Unwritable targets are errors too.
  CHECK_THROWS_AS(w.write((d / "no_such_dir" / "x.gpw").string()), Error);
  CHECK_THROWS_WITH_AS(w.write(d.string()), doctest::Contains("is a directory"), Error);
}

TEST_CASE("gpw: progress is reported per tensor up to the file size") {
  fs::path p = temp_dir() / "progress.gpw";
  GpwWriter w = sample_writer();
  uint64_t last = 0, total_seen = 0;
  int calls = 0;
  w.write(p.string(), [&](uint64_t done, uint64_t total) {
    CHECK(done >= last);
    last = done;
    total_seen = total;
    ++calls;
  });
  CHECK(calls == 6);
  CHECK(last == total_seen);
  CHECK(total_seen == fs::file_size(p));
}

TEST_CASE("gpw: every corrupted preamble or header byte and every truncation is an Error") {
  fs::path p = temp_dir() / "corrupt.gpw";
  sample_writer().write(p.string());
  const std::vector<uint8_t> good = slurp(p);
  gpw::Preamble pre;
  std::memcpy(&pre, good.data(), sizeof pre);
  CHECK_NOTHROW(GpwFile::from_memory(good.data(), good.size()));
  const size_t header_end = 64 + pre.header_bytes;
  for (size_t i = 0; i < header_end; ++i) {
    for (uint8_t bit : {uint8_t{0x01}, uint8_t{0x80}}) {
      std::vector<uint8_t> bad = good;
      bad[i] ^= bit;
      CAPTURE(i);
      CHECK_THROWS_AS(GpwFile::from_memory(bad.data(), bad.size()), Error);
    }
  }
  for (size_t n = 0; n < good.size(); n += (n < 400 ? 1 : 97)) {
    CAPTURE(n);
    CHECK_THROWS_AS(GpwFile::from_memory(good.data(), n), Error);
  }
  std::vector<uint8_t> longer = good;
  longer.push_back(0);
  CHECK_THROWS_WITH_AS(GpwFile::from_memory(longer.data(), longer.size()), doctest::Contains("truncated or damaged"),
                       Error);
}

TEST_CASE("gpw: semantically hostile headers with a valid checksum are refused") {
  const char* bad_tensors[] = {
      R"({"name":"a","dtype":"f32","shape":[2],"offset":0,"bytes":4})",                // bytes != shape
      R"({"name":"a","dtype":"f32","shape":[1],"offset":4,"bytes":4})",                // misaligned
      R"({"name":"a","dtype":"f32","shape":[1],"offset":512,"bytes":4})",              // past the end
      R"({"name":"a","dtype":"f32","shape":[1099511627777],"offset":0,"bytes":4})",    // absurd dim
      R"({"name":"a","dtype":"f32","shape":[4294967296,4294967296],"offset":0,"bytes":0})",
      R"({"name":"a","dtype":"f32","shape":[1,1,1,1,1,1,1],"offset":0,"bytes":4})",    // rank 7
      R"({"name":"a","dtype":"f32","shape":[-1],"offset":0,"bytes":4})",
      R"({"name":"a","dtype":"f32","shape":[1.5],"offset":0,"bytes":4})",
      R"({"name":"a","dtype":"f64","shape":[1],"offset":0,"bytes":8})",                // unknown dtype
      R"({"name":"","dtype":"f32","shape":[1],"offset":0,"bytes":4})",
      R"({"dtype":"f32","shape":[1],"offset":0,"bytes":4})",
      R"({"name":"a","dtype":"f32","shape":[1],"offset":-256,"bytes":4})",
      R"({"name":"a","dtype":"f32","shape":[1],"offset":0,"bytes":4},{"name":"a","dtype":"f32","shape":[1],"offset":256,"bytes":4})",
      R"({"name":"a","dtype":"f32","shape":[80],"offset":0,"bytes":320},{"name":"b","dtype":"f32","shape":[1],"offset":256,"bytes":4})",
      R"(7)",
  };
  for (const char* t : bad_tensors) {
    CAPTURE(t);
    auto img = image_with_header(header_with_tensor(t));
    CHECK_THROWS_AS(GpwFile::from_memory(img.data(), img.size()), Error);
  }
  const std::string bad_headers[] = {
      "[]", "{}", "not json", R"({"format":"gpw"})",
      R"({"format":"gpw","version":2,"arch":"gpen","config":{},"tensors":[]})",
      R"({"format":"gpw","version":1,"arch":"","config":{},"tensors":[]})",
      R"({"format":"gpw","version":1,"arch":"gpen","config":[],"tensors":[]})",
      R"({"format":"gpw","version":1,"arch":"gpen","config":{},"tensors":{}})",
      R"({"format":"gpw","version":1,"arch":"gpen","config":{},"storage_dtype":"q7","tensors":[]})",
      R"({"format":"gpw","version":1,"arch":"gpen","config":{"a":)" + std::string(200, '[') + std::string(200, ']') +
          R"(},"tensors":[]})",
  };
  for (const auto& h : bad_headers) {
    CAPTURE(h.substr(0, 80));
    auto img = image_with_header(h);
    CHECK_THROWS_AS(GpwFile::from_memory(img.data(), img.size()), Error);
  }
  // The same image with a valid tensor is accepted.
  auto ok = image_with_header(header_with_tensor(R"({"name":"a","dtype":"f32","shape":[1],"offset":256,"bytes":4})"));
  GpwFile f = GpwFile::from_memory(ok.data(), ok.size());
  CHECK(f.at("a").numel() == 1);
}

TEST_CASE("gpw: open() errors name the file") {
  fs::path d = temp_dir();
  CHECK_THROWS_WITH_AS(GpwFile::open((d / "missing.gpw").string()), doctest::Contains("missing.gpw"), Error);
  { std::ofstream(d / "short.gpw") << "GPW1"; }
  CHECK_THROWS_WITH_AS(GpwFile::open((d / "short.gpw").string()), doctest::Contains("short.gpw"), Error);
  CHECK_FALSE(GpwFile::has_magic((d / "missing.gpw").string()));
  CHECK_THROWS_AS(GpwFile::open(d.string()), Error);
}

TEST_CASE("half: f16 and bf16 conversions round to nearest even") {
  // Every half value survives half -> float -> half (NaNs stay NaNs).
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      CHECK(std::isnan(f16_to_f32(f32_to_f16(f))));
      continue;
    }
    REQUIRE(f32_to_f16(f) == h);
  }
  CHECK(f16_to_f32(0x3c00) == 1.0f);
  CHECK(f16_to_f32(0x0001) == std::ldexp(1.0f, -24));
  CHECK(f32_to_f16(65520.0f) == 0x7c00);     // rounds to infinity
  CHECK(f32_to_f16(65519.0f) == 0x7bff);
  CHECK(f32_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);  // tie to even
  CHECK(f32_to_f16(std::ldexp(1.0f, -25)) == 0);               // tie to even (zero)
  CHECK(f32_to_f16(std::ldexp(1.5f, -25)) == 1);
#if defined(__F16C__)
  std::mt19937 rng(7);
  for (int i = 0; i < 2000000; ++i) {
    uint32_t bits = rng();
    float f = f32_from_bits(bits);
    if (std::isnan(f)) continue;
    uint16_t want = static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
    REQUIRE_MESSAGE(f32_to_f16(f) == want, "bits " << bits);
  }
#endif
  CHECK(f32_to_bf16(1.0f) == 0x3f80);
  CHECK(f32_to_bf16(f32_from_bits(0x3f808000)) == 0x3f80);  // tie to even (down)
  CHECK(f32_to_bf16(f32_from_bits(0x3f818000)) == 0x3f82);  // tie to even (up)
  CHECK(f32_to_bf16(f32_from_bits(0x3f808001)) == 0x3f81);
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(std::nanf("")))));
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = bf16_to_f32(static_cast<uint16_t>(h));
    if (!std::isnan(f)) REQUIRE(f32_to_bf16(f) == h);
  }
}
