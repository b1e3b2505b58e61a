#include "weights/gpw.h"
#include "weights/quant8.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <set>

#include "engine/core/error.h"
#include "weights/gpw_format.h"
#include "weights/json_parse.h"

namespace gpen {

namespace gpw {

uint32_t crc32(const void* data, size_t n, uint32_t crc) {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xffu] ^ (crc >> 8);
  return ~crc;
}

}  // namespace gpw

namespace {
constexpr int64_t kMaxDim = int64_t{1} << 40;
constexpr size_t kMaxTensors = size_t{1} << 20;
}  // namespace

GpwFile GpwFile::open(const std::string& path) {
  GpwFile f;
  f.path_ = path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": cannot open: " + std::strerror(errno));
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path + ": not a regular file");
  }
  f.size_ = static_cast<uint64_t>(st.st_size);
  if (f.size_ < gpw::kPreambleBytes) {
    ::close(fd);
    throw Error(path + ": not a .gpw file (" + std::to_string(f.size_) + " bytes, too short)");
  }
  void* m = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);
  if (m == MAP_FAILED) throw Error(path + ": cannot map: " + std::strerror(err));
  f.map_ = m;
  f.base_ = static_cast<const uint8_t*>(m);
  f.parse();
  return f;
}

GpwFile GpwFile::from_memory(const uint8_t* data, size_t size, const std::string& name) {
  GpwFile f;
  f.path_ = name;
  f.owned_.reset(new uint8_t[size + gpw::kAlign]);
  uint8_t* p = f.owned_.get();
  p += (gpw::kAlign - reinterpret_cast<uintptr_t>(p) % gpw::kAlign) % gpw::kAlign;
  if (size) std::memcpy(p, data, size);
  f.base_ = p;
  f.size_ = size;
  f.parse();
  return f;
}

bool GpwFile::has_magic(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char m[4] = {};
  bool ok = ::pread(fd, m, 4, 0) == 4 && std::memcmp(m, gpw::kMagic, 4) == 0;
  ::close(fd);
  return ok;
}

GpwFile::GpwFile(GpwFile&& o) noexcept { *this = std::move(o); }

GpwFile& GpwFile::operator=(GpwFile&& o) noexcept {
  if (this != &o) {
    if (map_) ::munmap(map_, size_);
    path_ = std::move(o.path_);
    base_ = o.base_;
    size_ = o.size_;
    map_ = o.map_;
    owned_ = std::move(o.owned_);
    arch_ = std::move(o.arch_);
    config_ = std::move(o.config_);
    header_ = std::move(o.header_);
    storage_dtype_ = o.storage_dtype_;
    entries_ = std::move(o.entries_);
    index_ = std::move(o.index_);
    o.map_ = nullptr;
    o.base_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

void GpwFile::drop_pages(const void* p, size_t bytes) const {
  if (!map_ || bytes == 0) return;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(p) + bytes) / page * page;
  const uintptr_t m0 = reinterpret_cast<uintptr_t>(map_), m1 = m0 + size_;
  if (lo < hi && lo >= m0 && hi <= m1) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

void GpwFile::release_pages(const void* p, size_t bytes) const {
  if (!map_ || bytes == 0) return;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t m0 = reinterpret_cast<uintptr_t>(map_), m1 = m0 + size_;
  const uintptr_t lo = std::max(reinterpret_cast<uintptr_t>(p) / page * page, m0);
  const uintptr_t hi = std::min((reinterpret_cast<uintptr_t>(p) + bytes + page - 1) / page * page, m1);
  if (lo < hi) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

GpwFile::~GpwFile() {
  if (map_) ::munmap(map_, size_);
}

void GpwFile::parse() {
  auto fail = [&](const std::string& msg) { throw Error(path_ + ": " + msg); };
  if (size_ < gpw::kPreambleBytes) fail("not a .gpw file (too short)");
  gpw::Preamble pre;
  std::memcpy(&pre, base_, sizeof pre);
  if (std::memcmp(pre.magic, gpw::kMagic, 4) != 0) fail("not a .gpw file (bad magic)");
  if (pre.version != gpw::kVersion)
    fail("unsupported .gpw version " + std::to_string(pre.version) + " (this build reads version " +
         std::to_string(gpw::kVersion) + ")");
  if (pre.header_offset != gpw::kPreambleBytes || pre.reserved0 != 0 || pre.reserved[0] != 0 || pre.reserved[1] != 0)
    fail("corrupt .gpw preamble");
  if (pre.header_bytes == 0 || pre.header_bytes > gpw::kMaxHeaderBytes || pre.header_bytes > size_ - gpw::kPreambleBytes)
    fail("corrupt .gpw header length " + std::to_string(pre.header_bytes));
  if (pre.data_offset % gpw::kAlign != 0 || pre.data_offset < gpw::kPreambleBytes + pre.header_bytes ||
      pre.data_offset > size_)
    fail("corrupt .gpw data offset " + std::to_string(pre.data_offset));
  if (pre.data_bytes != size_ - pre.data_offset)
    fail("file has " + std::to_string(size_) + " bytes but its header describes " +
         std::to_string(pre.data_offset + pre.data_bytes) + " (truncated or damaged)");
  const char* htext = reinterpret_cast<const char*>(base_ + gpw::kPreambleBytes);
  if (gpw::crc32(htext, pre.header_bytes) != pre.header_crc32) fail("header checksum mismatch (corrupt file)");

  nlohmann::json h = parse_untrusted_json(htext, pre.header_bytes, path_ + ": .gpw header", 8);
  try {
    if (!h.is_object()) fail("header is not a JSON object");
    if (h.value("format", std::string()) != "gpw") fail("header format is not 'gpw'");
    if (!h.contains("version") || !h["version"].is_number_unsigned() || h["version"].get<uint64_t>() != gpw::kVersion)
      fail("header version mismatch");
    if (!h.contains("arch") || !h["arch"].is_string() || h["arch"].get<std::string>().empty() ||
        h["arch"].get<std::string>().size() > 64)
      fail("header has no valid 'arch'");
    arch_ = h["arch"].get<std::string>();
    if (!h.contains("config") || !h["config"].is_object()) fail("header has no 'config' object");
    config_ = h["config"];
    if (h.contains("storage_dtype")) {
      if (!h["storage_dtype"].is_string()) fail("header 'storage_dtype' is not a string");
      try {
        storage_dtype_ = parse_dtype(h["storage_dtype"].get<std::string>());
      } catch (const Error& e) {
        fail(std::string("header storage_dtype: ") + e.what());
      }
    }
    if (!h.contains("tensors") || !h["tensors"].is_array()) fail("header has no 'tensors' array");
    const auto& ts = h["tensors"];
    if (ts.size() > kMaxTensors) fail("header lists too many tensors");
    std::set<std::string> names;
    std::vector<std::pair<uint64_t, uint64_t>> spans;
    entries_.reserve(ts.size());
    for (size_t i = 0; i < ts.size(); ++i) {
      const auto& t = ts[i];
      std::string where = "tensor #" + std::to_string(i);
      if (!t.is_object()) fail(where + " is not an object");
      if (!t.contains("name") || !t["name"].is_string()) fail(where + " has no name");
      Entry e;
      e.name = t["name"].get<std::string>();
      if (e.name.empty() || e.name.size() > 512) fail(where + " has an invalid name");
      where = "tensor '" + e.name + "'";
      if (!names.insert(e.name).second) fail(where + " appears twice");
      if (!t.contains("dtype") || !t["dtype"].is_string()) fail(where + " has no dtype");
      DType dt = DType::f32;
      try {
        dt = parse_dtype(t["dtype"].get<std::string>());
      } catch (const Error& ex) {
        fail(where + ": " + ex.what());
      }
      if (!t.contains("shape") || !t["shape"].is_array() || t["shape"].size() > static_cast<size_t>(kMaxRank))
        fail(where + " has no valid shape (rank at most " + std::to_string(kMaxRank) + ")");
      Shape s;
      uint64_t numel = 1;
      for (const auto& d : t["shape"]) {
        if (!d.is_number_unsigned()) fail(where + " has a non-integer dimension");
        uint64_t x = d.get<uint64_t>();
        if (x > static_cast<uint64_t>(kMaxDim) || (x != 0 && numel > (uint64_t{1} << 48) / x))
          fail(where + " has an absurd shape");
        s.d[s.rank++] = static_cast<int64_t>(x);
        numel *= x;
      }
      if (!t.contains("offset") || !t["offset"].is_number_unsigned() || !t.contains("bytes") ||
          !t["bytes"].is_number_unsigned())
        fail(where + " has no valid offset/bytes");
      uint64_t off = t["offset"].get<uint64_t>(), bytes = t["bytes"].get<uint64_t>();
      if (bytes != numel * dtype_size(dt))
        fail(where + " has " + std::to_string(bytes) + " bytes, its shape " + s.str() + " needs " +
             std::to_string(numel * dtype_size(dt)));
      if (off % gpw::kAlign != 0) fail(where + " is not 256-byte aligned");
      if (off > pre.data_bytes || bytes > pre.data_bytes - off) fail(where + " lies past the end of the data");
      if (bytes) spans.emplace_back(off, bytes);
      e.offset = pre.data_offset + off;
      e.bytes = bytes;
      e.view = make_view(const_cast<uint8_t*>(base_ + e.offset), dt, s);
      entries_.push_back(std::move(e));
    }
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i)
      if (spans[i].first < spans[i - 1].first + spans[i - 1].second) fail("tensors overlap in the data section");
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("invalid header: ") + e.what());
  }
  header_ = std::move(h);
  index_.clear();
  for (size_t i = 0; i < entries_.size(); ++i) index_.emplace_back(entries_[i].name, i);
  std::sort(index_.begin(), index_.end());
  // An 8-bit weight is usable only with its scales: `<name>.qscale`, f32, one per output channel
  // ([O]) or per output channel and group of reduction rows ([G, O]; weights/quant8.h). Its view
  // carries them (TensorView::qscale, qgroup).
  for (Entry& e : entries_) {
    if (!dtype_is_8bit_weight(e.view.dtype)) continue;
    const std::string sn = e.name + ".qscale";
    const TensorView* sv = find(sn);
    const int64_t cout = q8_axes(e.view.shape).out;
    if (!sv)
      fail("tensor '" + e.name + "' is " + dtype_name(e.view.dtype) + " but has no scale tensor '" + sn +
           "' (f32, " + std::to_string(cout) + " values)");
    int64_t group = 0;
    if (sv->dtype != DType::f32 || !q8_group_of(e.view.shape, sv->shape, &group))
      fail("scale tensor '" + sn + "' is " + sv->shape.str() + " " + dtype_name(sv->dtype) + "; weight " +
           e.view.shape.str() + " needs " + q8_scale_expectation(e.view.shape));
    e.view.qscale = sv->f32();
    e.view.qgroup = group;
  }
}

const TensorView* GpwFile::find(const std::string& name) const {
  auto it = std::lower_bound(index_.begin(), index_.end(), std::make_pair(name, size_t{0}));
  return it != index_.end() && it->first == name ? &entries_[it->second].view : nullptr;
}

const TensorView& GpwFile::at(const std::string& name) const {
  const TensorView* v = find(name);
  if (!v) throw Error(path_ + ": no tensor '" + name + "'");
  return *v;
}

const TensorView& GpwFile::require(const std::string& name, const Shape& shape) const {
  const TensorView& v = at(name);
  if (!(v.shape == shape))
    throw Error(path_ + ": tensor '" + name + "' has shape " + v.shape.str() + ", expected " + shape.str());
  return v;
}

int64_t GpwFile::parameter_count() const {
  int64_t n = 0;
  for (const auto& e : entries_) n += e.view.numel();
  return n;
}

uint64_t GpwFile::tensor_bytes() const {
  uint64_t n = 0;
  for (const auto& e : entries_) n += e.bytes;
  return n;
}

}  // namespace gpen
