// The .npy reader/writer: files written by NumPy (tests/reference/make_op_fixtures.py writes them
// into tests/fixtures/ops/npy/), round trips, and clear errors for every malformed input.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/photo/npy.h"

using namespace gpen;

namespace {

const std::string kDir = std::string(GPEN_FIXTURE_DIR) + "/ops/npy";

std::string tmp_path(const std::string& name) {
  const auto dir = std::filesystem::path(GPEN_BINARY_DIR) / "test_npy_tmp";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The error message of parse(bytes), or "" when it parses.
std::string parse_error(const std::vector<uint8_t>& bytes) {
  try {
    npy::parse(bytes.data(), bytes.size(), "mem.npy");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::vector<uint8_t> with_header(const std::string& dict, size_t data_bytes, int major = 1) {
  const size_t len_bytes = major >= 2 ? 4 : 2, n = dict.size();
  std::vector<uint8_t> b(8 + len_bytes + n + data_bytes, 0);
  std::memcpy(b.data(), "\x93NUMPY", 6);
  b[6] = static_cast<uint8_t>(major);
  for (size_t i = 0; i < len_bytes; ++i) b[8 + i] = static_cast<uint8_t>(n >> (8 * i));
  std::memcpy(b.data() + 8 + len_bytes, dict.data(), n);
  return b;
}

}  // namespace

TEST_CASE("reads every supported dtype written by NumPy") {
  // Values are f(i) of the flat index i = 0..5 of a (2, 3) array (see make_op_fixtures.py).
  {
    const npy::Array a = npy::load(kDir + "/f4.npy");
    CHECK(a.type == npy::ElemType::f4);
    CHECK(a.shape == std::vector<int64_t>{2, 3});
    for (int i = 0; i < 6; ++i) CHECK(a.data<float>()[i] == doctest::Approx(i * 0.5 - 1));
  }
  {
    const npy::Array a = npy::load(kDir + "/f2.npy");
    CHECK(a.type == npy::ElemType::f2);
    const auto f = a.to_f32();
    for (int i = 0; i < 6; ++i) CHECK(f[i] == static_cast<float>(i * 0.25 - 0.5));  // exact in fp16
  }
  {
    const npy::Array a = npy::load(kDir + "/i4.npy");
    CHECK(a.type == npy::ElemType::i4);
    for (int i = 0; i < 6; ++i) CHECK(a.data<int32_t>()[i] == i * 1000 - 2500);
  }
  {
    const npy::Array a = npy::load(kDir + "/u1.npy");
    CHECK(a.type == npy::ElemType::u1);
    for (int i = 0; i < 6; ++i) CHECK(a.data<uint8_t>()[i] == i * 50);
  }
  {
    const npy::Array a = npy::load(kDir + "/i8.npy");
    CHECK(a.type == npy::ElemType::i8);
    for (int i = 0; i < 6; ++i) CHECK(a.data<int64_t>()[i] == (int64_t{i} - 3) * (int64_t{1} << 40));
  }
  {
    const npy::Array a = npy::load(kDir + "/f4_3d.npy");
    CHECK(a.shape == std::vector<int64_t>{2, 3, 4});
    CHECK(a.engine_shape() == Shape{2, 3, 4});
    CHECK(a.data<float>()[23] == 23.0f);
  }
  {
    const npy::Array a = npy::load(kDir + "/f4_scalar.npy");
    CHECK(a.shape.empty());
    CHECK(a.numel() == 1);
    CHECK(a.data<float>()[0] == 7.5f);
  }
  {
    const npy::Array a = npy::load(kDir + "/f4_empty.npy");
    CHECK(a.shape == std::vector<int64_t>{0, 3});
    CHECK(a.numel() == 0);
  }
  {
    const npy::Array a = npy::load(kDir + "/f4_v2.npy");  // version 2.0 header
    CHECK(a.shape == std::vector<int64_t>{2, 3});
    CHECK(a.data<float>()[5] == 1.5f);
  }
}

TEST_CASE("typed access checks the element type") {
  const npy::Array a = npy::load(kDir + "/i4.npy");
  CHECK_THROWS_AS(a.data<float>(), Error);
}

TEST_CASE("refuses unsupported NumPy files with a message naming the file") {
  for (const char* f : {"bad_bigendian.npy", "bad_fortran.npy", "bad_f8.npy"}) {
    CAPTURE(f);
    const std::string path = kDir + "/" + f;
    try {
      npy::load(path);
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find(path) != std::string::npos);
    }
  }
  CHECK_THROWS_WITH_AS(npy::load(kDir + "/bad_bigendian.npy"), doctest::Contains("big-endian"), Error);
  CHECK_THROWS_WITH_AS(npy::load(kDir + "/bad_fortran.npy"), doctest::Contains("Fortran"), Error);
  CHECK_THROWS_WITH_AS(npy::load(kDir + "/missing.npy"), doctest::Contains("missing.npy"), Error);
  CHECK_THROWS_AS(npy::load(kDir), Error);  // a directory
}

TEST_CASE("round trip of every dtype, byte-identical to NumPy's own files") {
  for (const char* f : {"f4.npy", "f2.npy", "i4.npy", "u1.npy", "i8.npy", "f4_3d.npy", "f4_scalar.npy",
                        "f4_empty.npy"}) {
    CAPTURE(f);
    const npy::Array a = npy::load(kDir + "/" + f);
    const std::string out = tmp_path(f);
    npy::save(out, a);
    const npy::Array b = npy::load(out);
    CHECK(b.type == a.type);
    CHECK(b.shape == a.shape);
    CHECK(b.bytes == a.bytes);
    // Same header layout as NumPy 1.x writes (64-byte aligned data, same dict text).
    CHECK(read_bytes(out) == read_bytes(kDir + "/" + f));
  }
}

TEST_CASE("save_f32 writes what load reads back") {
  const std::vector<float> v = {1.5f, -2.0f, 3.25f, 0.0f, 1e-30f, -7.0f};
  const std::string out = tmp_path("f32.npy");
  npy::save_f32(out, {3, 2}, v.data());
  const npy::Array a = npy::load(out);
  CHECK(a.shape == std::vector<int64_t>{3, 2});
  CHECK(a.to_f32() == v);
}

TEST_CASE("the maximum rank round-trips through a version 1 header") {
  std::vector<int64_t> shape(32, 1);  // the reader's maximum rank
  const std::vector<uint8_t> b = npy::serialize(npy::ElemType::u1, shape, "\x05");
  CHECK(b[6] == 1);
  const npy::Array a = npy::parse(b.data(), b.size(), "mem");
  CHECK(a.shape.size() == 32);
  CHECK(a.data<uint8_t>()[0] == 5);
}

TEST_CASE("malformed bytes give gpen::Error, never a crash or a huge allocation") {
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  CHECK(parse_error(with_header(ok, 24)).empty());
  CHECK(parse_error(with_header(ok, 24, 2)).empty());
  CHECK(parse_error(with_header(ok, 24, 3)).empty());
  CHECK(parse_error(with_header("{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}", 24)).empty());

  CHECK(parse_error({}).find("mem.npy") != std::string::npos);
  CHECK(parse_error({'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0}).find("bad magic") != std::string::npos);
  CHECK(parse_error(with_header(ok, 20)).find("truncated") != std::string::npos);           // truncated data
  CHECK(parse_error(with_header(ok, 28)).find("does not match") != std::string::npos);      // trailing bytes
  CHECK(!parse_error(with_header(ok, 24, 4)).empty());                                      // unknown version
  CHECK(!parse_error(with_header("{'descr': '<f4', 'fortran_order': False}", 24)).empty());  // no shape
  CHECK(!parse_error(with_header("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (6,)}", 24)).empty());
  CHECK(!parse_error(with_header("{'descr': '<c8', 'fortran_order': False, 'shape': (3,)}", 24)).empty());
  CHECK(!parse_error(with_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,)}", 24)).empty());
  CHECK(!parse_error(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-6,)}", 24)).empty());
  CHECK(!parse_error(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (6,", 24)).empty());
  CHECK(!parse_error(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 1}", 24)).empty());
  // Absurd shapes are refused before any allocation (and without overflowing the size product).
  CHECK(parse_error(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16)}", 24))
            .find("more data than the file holds") != std::string::npos);
  CHECK(!parse_error(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", 24))
             .empty());
  // A header length pointing past the end of the file.
  std::vector<uint8_t> b = with_header(ok, 24);
  b[8] = 0xff;
  b[9] = 0xff;
  CHECK(parse_error(b).find("truncated") != std::string::npos);
  // Every prefix of a valid file fails cleanly.
  const std::vector<uint8_t> full = with_header(ok, 24);
  for (size_t n = 0; n < full.size(); ++n) {
    CAPTURE(n);
    CHECK(!parse_error(std::vector<uint8_t>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n))).empty());
  }
}
