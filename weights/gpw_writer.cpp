#include "weights/gpw_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "engine/core/error.h"
#include "weights/gpw_format.h"
#include "weights/half.h"

namespace gpen {

void store_f32_as(DType dtype, const float* src, size_t n, void* dst) {
  switch (dtype) {
    case DType::f32: std::memcpy(dst, src, n * 4); return;
    case DType::f16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
      return;
    }
    case DType::bf16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
      return;
    }
    default: break;
  }
  throw Error(std::string("cannot store float weights as ") + dtype_name(dtype));
}

GpwWriter::GpwWriter(std::string arch, nlohmann::json config) : arch_(std::move(arch)), config_(std::move(config)) {
  GPEN_CHECK(!arch_.empty() && arch_.size() <= 64, "gpw: invalid arch name");
  GPEN_CHECK(config_.is_object(), "gpw: config must be a JSON object");
}

void GpwWriter::set_meta(const std::string& key, nlohmann::json value) {
  static const char* const kReserved[] = {"format", "version", "arch", "config", "storage_dtype", "tensors"};
  for (const char* r : kReserved) GPEN_CHECK(key != r, "gpw: metadata key '" + key + "' is reserved");
  meta_[key] = std::move(value);
}

void GpwWriter::add(const std::string& name, DType dtype, const Shape& shape, Filler fill) {
  GPEN_CHECK(!name.empty() && name.size() <= 512, "gpw: invalid tensor name '" + name + "'");
  for (const auto& t : tensors_) GPEN_CHECK(t.name != name, "gpw: tensor '" + name + "' added twice");
  for (int i = 0; i < shape.rank; ++i) GPEN_CHECK(shape.d[i] >= 0, "gpw: negative dimension in '" + name + "'");
  uint64_t bytes = static_cast<uint64_t>(shape.numel()) * dtype_size(dtype);
  tensors_.push_back({name, dtype, shape, bytes, std::move(fill)});
}

void GpwWriter::add_copy(const std::string& name, DType dtype, const Shape& shape, const void* data) {
  size_t bytes = static_cast<size_t>(shape.numel()) * dtype_size(dtype);
  auto buf = std::make_shared<std::vector<uint8_t>>(bytes);
  if (bytes) std::memcpy(buf->data(), data, bytes);
  add(name, dtype, shape, [buf](void* dst, size_t n) { std::memcpy(dst, buf->data(), n); });
}

void GpwWriter::add_f32(const std::string& name, DType dtype, const Shape& shape, const float* data) {
  size_t n = static_cast<size_t>(shape.numel());
  auto buf = std::make_shared<std::vector<uint8_t>>(n * dtype_size(dtype));
  store_f32_as(dtype, data, n, buf->data());
  add(name, dtype, shape, [buf](void* dst, size_t bytes) { std::memcpy(dst, buf->data(), bytes); });
}

std::string GpwWriter::header_text() const {
  nlohmann::json h = meta_;
  h["format"] = "gpw";
  h["version"] = gpw::kVersion;
  h["arch"] = arch_;
  h["config"] = config_;
  h["storage_dtype"] = dtype_name(storage_dtype_);
  nlohmann::json ts = nlohmann::json::array();
  uint64_t off = 0;
  for (const auto& t : tensors_) {
    nlohmann::json shape = nlohmann::json::array();
    for (int i = 0; i < t.shape.rank; ++i) shape.push_back(t.shape.d[i]);
    ts.push_back({{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", shape}, {"offset", off}, {"bytes", t.bytes}});
    off += gpw::align_up(t.bytes);
  }
  h["tensors"] = std::move(ts);
  return h.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int64_t GpwWriter::parameter_count() const {
  int64_t n = 0;
  for (const auto& t : tensors_) n += t.shape.numel();
  return n;
}

uint64_t GpwWriter::file_bytes() const {
  uint64_t data = 0;
  for (const auto& t : tensors_) data += gpw::align_up(t.bytes);
  return gpw::align_up(gpw::kPreambleBytes + header_text().size()) + data;
}

namespace {

void write_all(int fd, const void* p, size_t n, const std::string& path) {
  const auto* c = static_cast<const uint8_t*>(p);
  while (n > 0) {
    ssize_t w = ::write(fd, c, std::min<size_t>(n, size_t{1} << 30));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw Error("cannot write " + path + ": " + std::strerror(errno));
    c += w;
    n -= static_cast<size_t>(w);
  }
}

struct AlignedFree {
  void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t(gpw::kAlign)); }
};

}  // namespace

void GpwWriter::write(const std::string& path, const Progress& progress) const {
  const std::string header = header_text();
  gpw::Preamble pre{};
  std::memcpy(pre.magic, gpw::kMagic, 4);
  pre.version = gpw::kVersion;
  pre.header_offset = gpw::kPreambleBytes;
  pre.header_bytes = header.size();
  pre.data_offset = gpw::align_up(gpw::kPreambleBytes + header.size());
  pre.data_bytes = 0;
  uint64_t largest = 0;
  for (const auto& t : tensors_) {
    pre.data_bytes += gpw::align_up(t.bytes);
    largest = std::max(largest, gpw::align_up(t.bytes));
  }
  pre.header_crc32 = gpw::crc32(header.data(), header.size());
  const uint64_t total = pre.data_offset + pre.data_bytes;

  // The temporary file lives next to the target so that rename() is atomic.
  size_t slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  GPEN_CHECK(!base.empty(), "cannot write " + path + ": not a file name");
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) throw Error("cannot write " + path + ": is a directory");
  std::string tmp = dir + "/." + base + ".tmp-XXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw Error("cannot create a file in " + dir + ": " + std::strerror(errno));
  try {
    mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);
    std::vector<uint8_t> head(static_cast<size_t>(pre.data_offset), 0);
    std::memcpy(head.data(), &pre, sizeof pre);
    std::memcpy(head.data() + gpw::kPreambleBytes, header.data(), header.size());
    write_all(fd, head.data(), head.size(), path);
    uint64_t done = head.size();
    std::unique_ptr<uint8_t[], AlignedFree> buf(
        static_cast<uint8_t*>(::operator new[](std::max<uint64_t>(largest, gpw::kAlign), std::align_val_t(gpw::kAlign))));
    for (const auto& t : tensors_) {
      uint64_t padded = gpw::align_up(t.bytes);
      std::memset(buf.get() + t.bytes, 0, static_cast<size_t>(padded - t.bytes));
      if (t.bytes) t.fill(buf.get(), static_cast<size_t>(t.bytes));
      write_all(fd, buf.get(), static_cast<size_t>(padded), path);
      done += padded;
      if (progress) progress(done, total);
    }
    if (::fdatasync(fd) != 0) throw Error("cannot write " + path + ": " + std::strerror(errno));
    if (::close(fd) != 0) {
      fd = -1;
      throw Error("cannot write " + path + ": " + std::strerror(errno));
    }
    fd = -1;
    if (::rename(tmp.c_str(), path.c_str()) != 0) throw Error("cannot rename to " + path + ": " + std::strerror(errno));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
}

}  // namespace gpen
