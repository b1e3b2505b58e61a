#include "engine/photo/npy.h"

#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "engine/core/error.h"

namespace gpen::npy {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
// No file this engine reads or writes comes near this; it keeps a hostile header from making us
// allocate or index absurd sizes.
constexpr size_t kMaxHeaderLen = 1 << 20;
constexpr int kMaxDims = 32;

[[noreturn]] void fail(const std::string& name, const std::string& why) { throw Error(name + ": " + why); }

bool is_little_endian_host() {
  const uint16_t v = 1;
  uint8_t b;
  std::memcpy(&b, &v, 1);
  return b == 1;
}

// A tiny cursor over the header dict, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
struct HeaderParser {
  const std::string& s;
  const std::string& name;
  size_t i = 0;

  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  }
  bool peek(char c) {
    ws();
    return i < s.size() && s[i] == c;
  }
  void expect(char c) {
    ws();
    if (i >= s.size() || s[i] != c) fail(name, std::string("malformed .npy header: expected '") + c + "' in " + s);
    ++i;
  }
  std::string quoted() {
    ws();
    if (i >= s.size() || (s[i] != '\'' && s[i] != '"')) fail(name, "malformed .npy header: expected a string in " + s);
    const char q = s[i++];
    const size_t start = i;
    while (i < s.size() && s[i] != q) ++i;
    if (i >= s.size()) fail(name, "malformed .npy header: unterminated string");
    return s.substr(start, i++ - start);
  }
  std::string word() {
    ws();
    const size_t start = i;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
    return s.substr(start, i - start);
  }
  int64_t integer() {
    ws();
    if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i])))
      fail(name, "malformed .npy header: expected a non-negative dimension in " + s);
    int64_t v = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      const int d = s[i++] - '0';
      if (v > (std::numeric_limits<int64_t>::max() - d) / 10) fail(name, "dimension too large in .npy header");
      v = v * 10 + d;
    }
    // Python 2 era files may write long integers as 3L.
    if (i < s.size() && s[i] == 'L') ++i;
    return v;
  }
};

bool parse_descr(const std::string& d, ElemType& t) {
  if (d == "<f4") t = ElemType::f4;
  else if (d == "<f2") t = ElemType::f2;
  else if (d == "<i4") t = ElemType::i4;
  else if (d == "|u1" || d == "<u1" || d == ">u1") t = ElemType::u1;
  else if (d == "<i8") t = ElemType::i8;
  else return false;
  return true;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

size_t elem_size(ElemType t) {
  switch (t) {
    case ElemType::f4: return 4;
    case ElemType::f2: return 2;
    case ElemType::i4: return 4;
    case ElemType::u1: return 1;
    case ElemType::i8: return 8;
  }
  return 0;
}

const char* elem_descr(ElemType t) {
  switch (t) {
    case ElemType::f4: return "<f4";
    case ElemType::f2: return "<f2";
    case ElemType::i4: return "<i4";
    case ElemType::u1: return "|u1";
    case ElemType::i8: return "<i8";
  }
  return "?";
}

int64_t Array::numel() const {
  // A zero dimension makes the array empty whatever the others say (load() bounds the product of
  // non-empty shapes by the file size, not that of shapes with a 0, which may overflow).
  for (int64_t d : shape)
    if (d == 0) return 0;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {
template <class T>
constexpr ElemType type_of();
template <> constexpr ElemType type_of<float>() { return ElemType::f4; }
template <> constexpr ElemType type_of<uint16_t>() { return ElemType::f2; }
template <> constexpr ElemType type_of<int32_t>() { return ElemType::i4; }
template <> constexpr ElemType type_of<uint8_t>() { return ElemType::u1; }
template <> constexpr ElemType type_of<int64_t>() { return ElemType::i8; }
}  // namespace

template <class T>
const T* Array::data() const {
  GPEN_CHECK(type == type_of<T>(), std::string("npy: array holds ") + elem_descr(type) + ", not " +
                                       elem_descr(type_of<T>()));
  return reinterpret_cast<const T*>(bytes.data());
}
template <class T>
T* Array::data() {
  GPEN_CHECK(type == type_of<T>(), std::string("npy: array holds ") + elem_descr(type) + ", not " +
                                       elem_descr(type_of<T>()));
  return reinterpret_cast<T*>(bytes.data());
}
template const float* Array::data<float>() const;
template const uint16_t* Array::data<uint16_t>() const;
template const int32_t* Array::data<int32_t>() const;
template const uint8_t* Array::data<uint8_t>() const;
template const int64_t* Array::data<int64_t>() const;
template float* Array::data<float>();
template uint16_t* Array::data<uint16_t>();
template int32_t* Array::data<int32_t>();
template uint8_t* Array::data<uint8_t>();
template int64_t* Array::data<int64_t>();

Shape Array::engine_shape() const {
  GPEN_CHECK(shape.size() <= static_cast<size_t>(kMaxRank),
             "npy: rank " + std::to_string(shape.size()) + " exceeds the engine's maximum " + std::to_string(kMaxRank));
  Shape s;
  for (int64_t d : shape) s.d[s.rank++] = d;
  return s;
}

std::vector<float> Array::to_f32() const {
  const size_t n = static_cast<size_t>(numel());
  std::vector<float> out(n);
  const uint8_t* p = bytes.data();
  for (size_t i = 0; i < n; ++i) {
    switch (type) {
      case ElemType::f4: std::memcpy(&out[i], p + 4 * i, 4); break;
      case ElemType::f2: {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = half_to_float(h);
        break;
      }
      case ElemType::i4: {
        int32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        out[i] = static_cast<float>(v);
        break;
      }
      case ElemType::u1: out[i] = static_cast<float>(p[i]); break;
      case ElemType::i8: {
        int64_t v;
        std::memcpy(&v, p + 8 * i, 8);
        out[i] = static_cast<float>(v);
        break;
      }
    }
  }
  return out;
}

Array parse(const void* data, size_t size, const std::string& name) {
  GPEN_CHECK(is_little_endian_host(), "npy: big-endian hosts are not supported");
  const auto* b = static_cast<const uint8_t*>(data);
  if (size < kMagicLen + 4 || std::memcmp(b, kMagic, kMagicLen) != 0) fail(name, "not a .npy file (bad magic)");
  const int major = b[6];
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = b[8] | (static_cast<size_t>(b[9]) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) fail(name, "truncated .npy header");
    header_len = b[8] | (static_cast<size_t>(b[9]) << 8) | (static_cast<size_t>(b[10]) << 16) |
                 (static_cast<size_t>(b[11]) << 24);
    header_start = 12;
  } else {
    fail(name, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(b[7]));
  }
  if (header_len > kMaxHeaderLen) fail(name, ".npy header length " + std::to_string(header_len) + " is implausible");
  if (header_start + header_len > size) fail(name, "truncated .npy header");
  const std::string header(reinterpret_cast<const char*>(b + header_start), header_len);

  HeaderParser hp{header, name};
  bool have_descr = false, have_order = false, have_shape = false, fortran = false;
  std::string descr;
  Array a;
  hp.expect('{');
  while (!hp.peek('}')) {
    const std::string key = hp.quoted();
    hp.expect(':');
    if (key == "descr") {
      descr = hp.peek('[') ? std::string("<structured>") : hp.quoted();
      if (descr == "<structured>") fail(name, "structured .npy dtypes are not supported");
      have_descr = true;
    } else if (key == "fortran_order") {
      const std::string v = hp.word();
      if (v != "True" && v != "False") fail(name, "malformed fortran_order '" + v + "' in .npy header");
      fortran = v == "True";
      have_order = true;
    } else if (key == "shape") {
      hp.expect('(');
      while (!hp.peek(')')) {
        if (static_cast<int>(a.shape.size()) >= kMaxDims) fail(name, "too many dimensions in .npy header");
        a.shape.push_back(hp.integer());
        if (!hp.peek(')')) hp.expect(',');
      }
      hp.expect(')');
      have_shape = true;
    } else {
      fail(name, "unexpected key '" + key + "' in .npy header");
    }
    if (!hp.peek('}')) hp.expect(',');
  }
  hp.expect('}');
  if (!have_descr || !have_order || !have_shape) fail(name, "incomplete .npy header: " + header);
  if (!parse_descr(descr, a.type)) {
    const bool big = !descr.empty() && descr[0] == '>';
    fail(name, big ? "big-endian .npy data ('" + descr + "') is not supported"
                   : "unsupported .npy dtype '" + descr + "' (expected <f4, <f2, <i4, |u1 or <i8)");
  }
  if (fortran && a.shape.size() > 1) {
    int non_unit = 0;
    for (int64_t d : a.shape) non_unit += d > 1;
    if (non_unit > 1) fail(name, "Fortran-order .npy arrays are not supported (save with C order)");
  }
  // Size checks without overflow: the data must be exactly what the shape says.
  const size_t avail = size - header_start - header_len;
  const size_t es = elem_size(a.type);
  size_t count = 1;
  bool zero = false;
  for (int64_t d : a.shape) zero |= d == 0;
  if (!zero) {
    for (int64_t d : a.shape) {
      if (static_cast<uint64_t>(d) > avail / es / count)
        fail(name, "shape " + shape_str(a.shape) + " needs more data than the file holds (truncated?)");
      count *= static_cast<size_t>(d);
    }
  } else {
    count = 0;
  }
  if (count * es != avail)
    fail(name, "data size " + std::to_string(avail) + " bytes does not match shape " + shape_str(a.shape) + " of " +
                   descr + " (" + std::to_string(count * es) + " bytes)");
  a.bytes.assign(b + header_start + header_len, b + size);
  return a;
}

Array load(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw Error(path + ": no such .npy file");
  const uintmax_t fsize = std::filesystem::file_size(path, ec);
  if (ec) throw Error(path + ": cannot read (" + ec.message() + ")");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open");
  std::vector<uint8_t> buf(static_cast<size_t>(fsize));
  if (!buf.empty() && !f.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(buf.size())))
    throw Error(path + ": read error");
  return parse(buf.data(), buf.size(), path);
}

std::vector<uint8_t> serialize(ElemType type, const std::vector<int64_t>& shape, const void* data) {
  GPEN_CHECK(is_little_endian_host(), "npy: big-endian hosts are not supported");
  size_t count = 1;
  for (int64_t d : shape) {
    GPEN_CHECK(d >= 0, "npy: negative dimension in shape " + shape_str(shape));
    count *= static_cast<size_t>(d);
  }
  std::string dict = std::string("{'descr': '") + elem_descr(type) + "', 'fortran_order': False, 'shape': " +
                     shape_str(shape) + ", }";
  // Pad with spaces and end with '\n' so the data starts on a 64-byte boundary (as NumPy does).
  size_t prefix = kMagicLen + 2 + 2;
  int major = 1;
  size_t total = prefix + dict.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  if (padded - prefix > 0xffff) {
    major = 2;
    prefix = kMagicLen + 2 + 4;
    total = prefix + dict.size() + 1;
    padded = (total + 63) / 64 * 64;
  }
  dict.append(padded - total, ' ');
  dict.push_back('\n');
  const size_t hlen = dict.size();
  const size_t data_bytes = count * elem_size(type);
  std::vector<uint8_t> out(prefix + hlen + data_bytes);
  std::memcpy(out.data(), kMagic, kMagicLen);
  out[6] = static_cast<uint8_t>(major);
  out[7] = 0;
  for (size_t i = 0; i + kMagicLen + 2 < prefix; ++i) out[kMagicLen + 2 + i] = static_cast<uint8_t>(hlen >> (8 * i));
  std::memcpy(out.data() + prefix, dict.data(), hlen);
  if (data_bytes) std::memcpy(out.data() + prefix + hlen, data, data_bytes);
  return out;
}

void save(const std::string& path, ElemType type, const std::vector<int64_t>& shape, const void* data) {
  const std::vector<uint8_t> bytes = serialize(type, shape, data);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error(path + ": cannot open for writing");
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw Error(path + ": write error");
}

void save(const std::string& path, const Array& a) {
  GPEN_CHECK(a.bytes.size() == static_cast<size_t>(a.numel()) * elem_size(a.type),
             path + ": array bytes do not match its shape");
  save(path, a.type, a.shape, a.bytes.data());
}

void save_f32(const std::string& path, const std::vector<int64_t>& shape, const float* data) {
  save(path, ElemType::f4, shape, data);
}

}  // namespace gpen::npy
