#include "converter/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine/core/error.h"

namespace gpen::conv {

namespace {

class FileSource final : public ByteSource {
 public:
  explicit FileSource(const std::string& path) {
    name_ = path;
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw Error(path + ": cannot open: " + std::strerror(errno));
    struct stat st{};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw Error(path + ": not a regular file");
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~FileSource() override { ::close(fd_); }
  uint64_t size() const override { return size_; }
  void read(uint64_t offset, size_t n, void* dst) const override {
    if (offset > size_ || n > size_ - offset)
      throw Error(name_ + ": read of " + std::to_string(n) + " bytes at offset " + std::to_string(offset) +
                  " is past the end of the file (" + std::to_string(size_) + " bytes): truncated file?");
    auto* p = static_cast<uint8_t*>(dst);
    while (n > 0) {
      ssize_t got = ::pread(fd_, p, std::min<size_t>(n, size_t{1} << 30), static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) throw Error(name_ + ": read failed at offset " + std::to_string(offset));
      p += got;
      offset += static_cast<uint64_t>(got);
      n -= static_cast<size_t>(got);
    }
  }

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
};

class MemorySource final : public ByteSource {
 public:
  MemorySource(const uint8_t* data, size_t size, std::string name) : data_(data), size_(size) {
    name_ = std::move(name);
  }
  uint64_t size() const override { return size_; }
  void read(uint64_t offset, size_t n, void* dst) const override {
    if (offset > size_ || n > size_ - offset)
      throw Error(name_ + ": read of " + std::to_string(n) + " bytes at offset " + std::to_string(offset) +
                  " is past the end of the input (" + std::to_string(size_) + " bytes): truncated?");
    if (n) std::memcpy(dst, data_ + offset, n);
  }
  const uint8_t* memory() const override { return data_; }
  const std::string& path() const override {
    static const std::string empty;
    return empty;
  }

 private:
  const uint8_t* data_;
  size_t size_;
};

}  // namespace

std::unique_ptr<ByteSource> open_file_source(const std::string& path) { return std::make_unique<FileSource>(path); }

std::unique_ptr<ByteSource> memory_source(const uint8_t* data, size_t size, std::string name) {
  return std::make_unique<MemorySource>(data, size, std::move(name));
}

ByteReader::ByteReader(const ByteSource& src, uint64_t start, uint64_t limit)
    : src_(&src), pos_(start), end_(std::min<uint64_t>(src.size(), limit)), name_(src.name()) {
  if (const uint8_t* m = src.memory()) {
    mem_ = m;
    src_ = nullptr;
  }
  window_start_ = start;
}

ByteReader::ByteReader(const uint8_t* data, size_t size, std::string name)
    : mem_(data), pos_(0), end_(size), name_(std::move(name)) {}

const uint8_t* ByteReader::take(size_t n) {
  if (pos_ > end_ || n > end_ - pos_)
    throw Error("unexpected end of data at byte " + std::to_string(pos_) + " (truncated file?)");
  if (mem_) {
    const uint8_t* p = mem_ + pos_;
    pos_ += n;
    return p;
  }
  // File: keep a window [window_start_, window_start_ + window_.size()) and refill in large
  // chunks so that a pickle is read with a few syscalls.
  uint64_t have_end = window_start_ + window_.size();
  if (pos_ < window_start_ || pos_ + n > have_end) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(end_ - pos_, std::max<uint64_t>(n, 1u << 20)));
    window_.resize(chunk);
    src_->read(pos_, chunk, window_.data());
    window_start_ = pos_;
  }
  const uint8_t* p = window_.data() + (pos_ - window_start_);
  pos_ += n;
  return p;
}

}  // namespace gpen::conv
