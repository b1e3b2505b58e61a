#pragma once
// What the converter tests share: the checkpoint fixtures of tests/reference/make_checkpoint_fixtures.py,
// the message of an expected gpen::Error, and a writer of pickle byte strings opcode by opcode.
#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/core/error.h"

namespace gpen_test {

inline const std::string kCheckpointDir = GPEN_FIXTURE_DIR "/checkpoints/";

inline std::vector<uint8_t> slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  REQUIRE_MESSAGE(f.good(), "missing fixture " << p << " (run tests/reference/make_checkpoint_fixtures.py)");
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// The JSON manifest of checkpoint fixture `base` (its tensors' names, shapes and checksums).
inline nlohmann::json manifest(const std::string& base) {
  auto b = slurp(kCheckpointDir + base + ".json");
  return nlohmann::json::parse(b.begin(), b.end());
}

// The message of the gpen::Error fn throws ("" when it throws none).
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const gpen::Error& e) {
    return e.what();
  }
  return "";
}

// Pickle byte strings built opcode by opcode (little-endian operands, as pickle writes them).
struct PickleBytes {
  std::string b;
  PickleBytes& op(int c) {
    b.push_back(static_cast<char>(c));
    return *this;
  }
  PickleBytes& raw(const std::string& s) {
    b += s;
    return *this;
  }
  PickleBytes& le(uint64_t v, int bytes) {
    for (int k = 0; k < bytes; ++k) b.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
    return *this;
  }
  PickleBytes& u32(uint32_t v) { return le(v, 4); }
  PickleBytes& u64(uint64_t v) { return le(v, 8); }
  PickleBytes& proto(int v = 2) { return op(0x80).op(v); }
  PickleBytes& str(const std::string& s) { return op('X').u32(static_cast<uint32_t>(s.size())).raw(s); }  // BINUNICODE
  PickleBytes& sstr(const std::string& s) { return op(0x8c).op(static_cast<int>(s.size())).raw(s); }  // SHORT_BINUNICODE
  PickleBytes& k(int v) { return op('K').op(v); }                                       // BININT1
  PickleBytes& i32(int32_t v) { return op('J').u32(static_cast<uint32_t>(v)); }        // BININT
  PickleBytes& i64(uint64_t v) { return op(0x8a).op(8).u64(v); }                       // LONG1, 8 bytes
  PickleBytes& global(const std::string& m, const std::string& n) { return op('c').raw(m + "\n" + n + "\n"); }
  PickleBytes& stop() { return op('.'); }
  // ('storage', torch.<type>, key, 'cpu', numel) BINPERSID
  PickleBytes& storage(const std::string& type, const std::string& key, int numel) {
    return op('(').str("storage").global("torch", type).str(key).str("cpu").k(numel).op('t').op('Q');
  }
};

}  // namespace gpen_test
