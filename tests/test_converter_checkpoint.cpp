// Checkpoint readers (PyTorch zip, PyTorch legacy, safetensors): bit-identical tensors against
// the Python-written fixtures, the real RetinaFace checkpoint, nested dicts and prefixes, and
// bad input of every kind being a one-line gpen::Error.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <zip.h>

#include "converter/checkpoint.h"
#include "converter/convert.h"
#include "engine/core/error.h"
#include "weights/gpw_format.h"
#include "tests/converter_fixtures.h"

using namespace gpen;
using namespace gpen::conv;
using gpen_test::kCheckpointDir;
using gpen_test::slurp;
using gpen_test::manifest;
using gpen_test::error_of;
using P = gpen_test::PickleBytes;

namespace {

// Opens (and, when that works, reads every tensor of) a buffer: the only acceptable failure is a
// gpen::Error with a single-line message.
void open_and_read_all(const std::vector<uint8_t>& buf) {
  try {
    auto ck = Checkpoint::open_memory(buf.data(), buf.size(), "mutant");
    for (const auto& t : ck->tensors()) {
      if (t.nbytes > (64u << 20)) continue;
      std::vector<uint8_t> dst(static_cast<size_t>(t.nbytes));
      ck->read_raw(t, dst.data());
    }
    summarize(*ck);
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK(m.find('\n') == std::string::npos);
    CHECK(!m.empty());
  }
}

// Builds pickle byte strings opcode by opcode.
std::string le64(uint64_t v) {
  std::string s;
  for (int k = 0; k < 8; ++k) s.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
  return s;
}

// A legacy-format file: magic, protocol, system info, {'w': tensor}, storage keys ['0'], data.
// The tensor has dims `size` (dense strides) over FloatStorage '0' declared with `numel` elements.
std::vector<uint8_t> legacy_file(const std::vector<int32_t>& size, uint64_t numel, const std::string& storages) {
  P magic, proto, sys, main, keys;
  magic.op(0x80).op(2).op(0x8a).op(10).raw(std::string("\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", 10)).op('.');
  proto.op(0x80).op(2).op('M').op(0xe9).op(0x03).op('.');
  sys.op(0x80).op(2).op('}').str("little_endian").op(0x88).op('s').op('.');
  main.op(0x80).op(2).op('}').str("w").global("torch._utils", "_rebuild_tensor").op('(');
  main.op('(').str("storage").global("torch", "FloatStorage").str("0").str("cpu").i64(numel).op('N').op('t').op('Q');
  main.k(0).op('(');
  for (int32_t d : size) main.i32(d);
  main.op('t').op('(');
  for (size_t i = 0; i < size.size(); ++i) {
    int64_t st = 1;
    for (size_t j = i + 1; j < size.size(); ++j) st *= size[j];
    main.i32(static_cast<int32_t>(st));
  }
  main.op('t').op('t').op('R').op('s').op('.');
  keys.op(0x80).op(2).op(']').str("0").op('a').op('.');
  std::string all = magic.b + proto.b + sys.b + main.b + keys.b + storages;
  return std::vector<uint8_t>(all.begin(), all.end());
}

}  // namespace

TEST_CASE("checkpoint: tiny GPEN in zip, legacy and safetensors reads bit-identical") {
  const auto ref = manifest("gpen_s64.ref");
  const auto blob = slurp(kCheckpointDir + "gpen_s64.ref.bin");
  struct Case {
    const char* file;
    const char* format;
    const char* key;
  } cases[] = {{"gpen_s64.zip.pth", "pytorch-zip", "g_ema"},
               {"gpen_s64.legacy.pth", "pytorch-legacy", ""},
               {"gpen_s64.safetensors", "safetensors", ""}};
  for (const auto& c : cases) {
    CAPTURE(c.file);
    auto ck = Checkpoint::open(kCheckpointDir + c.file);
    CHECK(ck->format() == c.format);
    CHECK(ck->selected_key() == c.key);
    REQUIRE(ck->tensors().size() == ref.size());
    for (const auto& r : ref) {
      const std::string name = r["name"];
      CAPTURE(name);
      const SourceTensor* t = ck->find(name);  // 'module.' stripped in the zip variant
      REQUIRE(t);
      CHECK(t->dtype == SrcDType::f32);
      CHECK(t->shape == r["shape"].get<std::vector<int64_t>>());
      REQUIRE(t->nbytes == r["bytes"].get<uint64_t>());
      std::vector<uint8_t> got(static_cast<size_t>(t->nbytes));
      ck->read_raw(*t, got.data());
      CHECK(std::memcmp(got.data(), blob.data() + r["offset"].get<size_t>(), got.size()) == 0);
    }
    // Dict order is kept (the official layout order for these fixtures).
    CHECK(ck->tensors().front().name == "generator.style.1.weight");
  }
}

TEST_CASE("checkpoint: shared-storage RetinaFace fixture (views at storage offsets), all formats") {
  const auto ref = manifest("mnet.ref");
  const char* files[] = {"mnet.zip.pth", "mnet.legacy.pth", "mnet.safetensors"};
  for (const char* f : files) {
    CAPTURE(f);
    auto ck = Checkpoint::open(kCheckpointDir + f);
    REQUIRE(ck->tensors().size() == ref.size());
    int floats = 0;
    for (const auto& r : ref) {
      const std::string name = r["name"];
      CAPTURE(name);
      const SourceTensor* t = ck->find(name);
      REQUIRE(t);
      CHECK(t->shape == r["shape"].get<std::vector<int64_t>>());
      std::vector<uint8_t> bytes;
      if (r["dtype"] == "float32") {
        // safetensors holds these as float16; every value is float16-exact.
        auto v = ck->read_f32(*t);
        bytes.assign(reinterpret_cast<uint8_t*>(v.data()), reinterpret_cast<uint8_t*>(v.data() + v.size()));
        ++floats;
      } else {
        CHECK(t->dtype == SrcDType::i64);
        bytes.resize(static_cast<size_t>(t->nbytes));
        ck->read_raw(*t, bytes.data());
      }
      CHECK(gpw::crc32(bytes.data(), bytes.size()) == r["crc32"].get<uint32_t>());
    }
    CHECK(floats == 253);
    auto s = summarize(*ck);
    CHECK(s.valid);
    CHECK(s.arch == Arch::retinaface);
    CHECK(s.config["backbone"] == "mobilenet0.25");
    CHECK(s.parameters == 433296);
  }
}

TEST_CASE("checkpoint: the real RetinaFace mobilenet0.25 checkpoint (legacy, cuda:0 storages)") {
  const std::string path = GPEN_SHARED_DIR "/models/retinaface-mobilenet0.25.pth";
  if (!std::ifstream(path).good()) {
    MESSAGE("skipped: " << path << " is absent");
    return;
  }
  auto ck = Checkpoint::open(path);
  CHECK(ck->format() == "pytorch-legacy");
  CHECK(ck->tensors().size() == 300);
  auto s = summarize(*ck);
  CHECK(s.valid);
  CHECK(s.problem == "");
  CHECK(s.arch == Arch::retinaface);
  CHECK(s.config["backbone"] == "mobilenet0.25");
  CHECK(s.parameters == 433296);
  CHECK(s.ignored.empty());
  // Every running variance is positive and every weight finite: the bytes are where we think.
  for (const auto& t : ck->tensors()) {
    if (!src_dtype_is_float(t.dtype)) continue;
    auto v = ck->read_f32(t);
    for (float x : v) REQUIRE(std::isfinite(x));
    if (t.name.size() > 12 && t.name.compare(t.name.size() - 12, 12, ".running_var") == 0)
      for (float x : v) CHECK(x > 0);
  }
  CHECK(ck->find("body.stage1.0.0.weight")->shape == std::vector<int64_t>{8, 3, 3, 3});
}

TEST_CASE("checkpoint: --key selects a nested dict, errors list what is there") {
  OpenOptions o;
  o.key = "g_ema";
  CHECK(Checkpoint::open(kCheckpointDir + "gpen_s64.zip.pth", o)->tensors().size() == 94);
  o.key = "iter";
  CHECK(error_of([&] { Checkpoint::open(kCheckpointDir + "gpen_s64.zip.pth", o); }).find("does not name a dict of tensors") !=
        std::string::npos);
  o.key = "nope";
  std::string e = error_of([&] { Checkpoint::open(kCheckpointDir + "gpen_s64.zip.pth", o); });
  CHECK(e.find("no key 'nope'") != std::string::npos);
  CHECK(e.find("g_ema") != std::string::npos);
  CHECK(e.find("gpen_s64.zip.pth") != std::string::npos);
  o.key = "args.size";
  CHECK(error_of([&] { Checkpoint::open(kCheckpointDir + "gpen_s64.zip.pth", o); }).find("not name a dict of tensors") !=
        std::string::npos);
  // safetensors: the key is a name prefix.
  o.key = "generator.style";
  auto st = Checkpoint::open(kCheckpointDir + "gpen_s64.safetensors", o);
  CHECK(st->tensors().size() == 4);
  CHECK(st->find("1.weight"));
}

TEST_CASE("checkpoint: refused inputs name the file and the reason") {
  struct Bad {
    const char* file;
    const char* msg;
  } bad[] = {
      {"bad_global.pth", "refusing unsupported global 'argparse.Namespace'"},
      {"bad_module.pth", "torch.nn.modules.linear.Linear"},
      {"bad_noncontig.pth", "is not contiguous"},
      {"bad_os_system.pth", "'os.system'"},
      {"bad_os_system_legacy.pth", "'os.system'"},
      {"bad_inst.pth", "INST"},
      {"no_datapkl.zip", "no <name>/data.pkl"},
  };
  for (const auto& b : bad) {
    CAPTURE(b.file);
    std::string e = error_of([&] { Checkpoint::open(kCheckpointDir + b.file); });
    CHECK(e.find(b.msg) != std::string::npos);
    CHECK(e.find(b.file) != std::string::npos);
    CHECK(e.find('\n') == std::string::npos);
  }
  CHECK(error_of([] { Checkpoint::open(kCheckpointDir + "does_not_exist.pth"); }).find("cannot open") != std::string::npos);
  CHECK(error_of([] { Checkpoint::open(kCheckpointDir); }).find("not a regular file") != std::string::npos);
  std::vector<uint8_t> text = {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '\n'};
  CHECK(error_of([&] { Checkpoint::open_memory(text.data(), text.size(), "t.pth"); }).find("not a PyTorch") !=
        std::string::npos);
  CHECK(error_of([&] { Checkpoint::open_memory(text.data(), 0, "empty.pth"); }).find("not a PyTorch") !=
        std::string::npos);
}

TEST_CASE("checkpoint: hand-made legacy files with absurd sizes fail before allocating") {
  // A storage of 2^40 floats with 16 bytes of data behind it.
  auto b = legacy_file({4}, uint64_t{1} << 40, le64(uint64_t{1} << 40) + std::string(16, '\0'));
  CHECK(error_of([&] { Checkpoint::open_memory(b.data(), b.size(), "huge"); }).find("past the end") != std::string::npos);
  // A tensor far larger than its storage.
  b = legacy_file({1 << 20, 1 << 20}, 4, le64(4) + std::string(16, '\0'));
  CHECK(error_of([&] { Checkpoint::open_memory(b.data(), b.size(), "big"); }).find("extends past its storage") !=
        std::string::npos);
  // The element count in the file disagrees with the pickle.
  b = legacy_file({4}, 4, le64(5) + std::string(20, '\0'));
  CHECK(error_of([&] { Checkpoint::open_memory(b.data(), b.size(), "count"); }).find("declares 4") != std::string::npos);
  // The well-formed version reads.
  b = legacy_file({2, 2}, 4, le64(4) + std::string("\0\0\x80\x3f\0\0\0\x40\0\0\x40\x40\0\0\x80\x40", 16));
  auto ck = Checkpoint::open_memory(b.data(), b.size(), "ok");
  CHECK(ck->find("w")->shape == std::vector<int64_t>{2, 2});
  CHECK(ck->read_f32(*ck->find("w")) == std::vector<float>{1, 2, 3, 4});
  // Data cut short.
  b.resize(b.size() - 1);
  CHECK(error_of([&] { Checkpoint::open_memory(b.data(), b.size(), "short"); }).find("past the end") !=
        std::string::npos);
  // Wrong magic number.
  b = legacy_file({4}, 4, le64(4) + std::string(16, '\0'));
  b[5] ^= 1;
  CHECK(error_of([&] { Checkpoint::open_memory(b.data(), b.size(), "magic"); }).find("magic number") !=
        std::string::npos);
}

TEST_CASE("checkpoint: malformed safetensors headers") {
  auto make = [](const std::string& header, size_t data) {
    std::string s = le64(header.size()) + header + std::string(data, '\0');
    return std::vector<uint8_t>(s.begin(), s.end());
  };
  struct Bad {
    std::string header;
    const char* msg;
  } bad[] = {
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", "lie outside"},
      {R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", "its shape needs"},
      {R"({"a":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", "unsupported dtype"},
      {R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", "invalid shape"},
      {R"({"a":{"dtype":"F32","shape":[1099511627777],"data_offsets":[0,8]}})", "absurd"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", "lie outside"},
      {R"({"a":{"dtype":"F32","shape":[2]}})", "lacks"},
      {R"({"a":[1,2]})", "lacks"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}, "b":[1,2]})", "lacks"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}, "b":7})", "lacks"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})", "malformed JSON"},
      {R"({"__metadata__":{}})", "no tensors"},
      {R"({"a":{"x":)" + std::string(100, '[') + std::string(100, ']') + "}}", "nested deeper"},
  };
  for (const auto& b : bad) {
    CAPTURE(b.header);
    auto buf = make(b.header, 8);
    CHECK(error_of([&] { Checkpoint::open_memory(buf.data(), buf.size(), "t.safetensors"); }).find(b.msg) !=
          std::string::npos);
  }
  auto buf = make(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8);
  buf[0] = 0xff;  // header length past the end of the file
  CHECK(error_of([&] { Checkpoint::open_memory(buf.data(), buf.size(), "t.safetensors"); }).find("header length") !=
        std::string::npos);
  // A header whose length's low byte is 0x80, a pickle's PROTO opcode, is still safetensors.
  std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  header.append(0x180 - header.size(), ' ');
  buf = make(header, 8);
  REQUIRE(buf[0] == 0x80);
  CHECK(Checkpoint::open_memory(buf.data(), buf.size(), "t.safetensors")->format() == "safetensors");
  buf = make("[1,2]   ", 8);  // not an object: not recognised as safetensors at all
  CHECK(error_of([&] { Checkpoint::open_memory(buf.data(), buf.size(), "t.safetensors"); }).find("not a PyTorch") !=
        std::string::npos);
}

TEST_CASE("checkpoint: every truncation and random corruption is an Error, never a crash") {
  const char* files[] = {"gpen_s64.zip.pth", "gpen_s64.legacy.pth", "gpen_s64.safetensors", "mnet.legacy.pth",
                         "bad_noncontig.pth"};
  std::mt19937 rng(1234);
  for (const char* f : files) {
    CAPTURE(f);
    const auto good = slurp(kCheckpointDir + f);
    for (size_t n = 0; n < good.size(); n += (n < 3000 ? 7 : 4099)) {
      CAPTURE(n);
      open_and_read_all(std::vector<uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n)));
    }
    // Byte flips, concentrated on the first 4 KiB where the pickles and headers live.
    for (int i = 0; i < 300; ++i) {
      auto bad = good;
      int flips = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < flips; ++k) {
        size_t at = rng() % std::min<size_t>(bad.size(), i % 3 ? 4096 : bad.size());
        bad[at] = static_cast<uint8_t>(rng());
      }
      open_and_read_all(bad);
    }
  }
  // Random bytes behind each format's magic.
  const std::vector<std::vector<uint8_t>> prefixes = {{}, {'P', 'K', 3, 4}, {0x80, 2}, {0x80, 2, 0x8a, 0x0a}, {16, 0, 0, 0, 0, 0, 0, 0, '{'}};
  for (int i = 0; i < 400; ++i) {
    std::vector<uint8_t> buf = prefixes[i % prefixes.size()];
    size_t n = rng() % 2048;
    for (size_t k = 0; k < n; ++k) buf.push_back(static_cast<uint8_t>(rng()));
    open_and_read_all(buf);
  }
}

TEST_CASE("checkpoint: deflated zip records (re-compressed torch file) read the same values") {
  // Re-pack mnet.zip.pth with every record deflated: tensors at storage offsets then need the
  // non-seeking path.
  const auto src = slurp(kCheckpointDir + "mnet.zip.pth");
  zip_error_t err;
  zip_error_init(&err);
  zip_source_t* in_src = zip_source_buffer_create(src.data(), src.size(), 0, &err);
  REQUIRE(in_src);
  zip_t* in = zip_open_from_source(in_src, ZIP_RDONLY, &err);
  REQUIRE(in);
  zip_source_t* out_src = zip_source_buffer_create(nullptr, 0, 0, &err);
  REQUIRE(out_src);
  zip_source_keep(out_src);
  zip_t* out = zip_open_from_source(out_src, ZIP_TRUNCATE, &err);
  REQUIRE(out);
  std::vector<std::vector<uint8_t>> keep;
  for (zip_int64_t i = 0; i < zip_get_num_entries(in, 0); ++i) {
    zip_stat_t st;
    REQUIRE(zip_stat_index(in, static_cast<zip_uint64_t>(i), 0, &st) == 0);
    keep.emplace_back(static_cast<size_t>(st.size));
    zip_file_t* f = zip_fopen_index(in, static_cast<zip_uint64_t>(i), 0);
    REQUIRE(zip_fread(f, keep.back().data(), st.size) == static_cast<zip_int64_t>(st.size));
    zip_fclose(f);
    zip_source_t* s = zip_source_buffer(out, keep.back().data(), keep.back().size(), 0);
    zip_int64_t idx = zip_file_add(out, st.name, s, ZIP_FL_OVERWRITE);
    REQUIRE(idx >= 0);
    zip_set_file_compression(out, static_cast<zip_uint64_t>(idx), ZIP_CM_DEFLATE, 1);
  }
  REQUIRE(zip_close(out) == 0);
  zip_discard(in);
  REQUIRE(zip_source_open(out_src) == 0);
  zip_source_seek(out_src, 0, SEEK_END);
  zip_int64_t n = zip_source_tell(out_src);
  zip_source_seek(out_src, 0, SEEK_SET);
  std::vector<uint8_t> packed(static_cast<size_t>(n));
  REQUIRE(zip_source_read(out_src, packed.data(), packed.size()) == n);
  zip_source_close(out_src);
  zip_source_free(out_src);
  CHECK(packed.size() < src.size());  // really compressed

  const auto ref = manifest("mnet.ref");
  auto ck = Checkpoint::open_memory(packed.data(), packed.size(), "deflated.pth");
  for (const auto& r : ref) {
    const SourceTensor* t = ck->find(r["name"].get<std::string>());
    REQUIRE(t);
    std::vector<uint8_t> bytes(static_cast<size_t>(t->nbytes));
    ck->read_raw(*t, bytes.data());
    CHECK(gpw::crc32(bytes.data(), bytes.size()) == r["crc32"].get<uint32_t>());
  }
}
