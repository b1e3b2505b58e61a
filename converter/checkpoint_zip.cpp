// The zip format of torch >= 1.6: <prefix>/data.pkl plus one record <prefix>/data/<key> per
// storage, read through libzip with every claimed size checked first.
#include <zip.h>

#include <algorithm>
#include <map>

#include "converter/checkpoint_internal.h"

namespace gpen::conv {

namespace {

constexpr uint64_t kMaxPickleBytes = uint64_t{256} << 20;
// Deflate cannot expand data more than ~1032x; a larger claimed size is a lie.
constexpr uint64_t kMaxDeflateRatio = 1100;

class ZipCheckpoint final : public Checkpoint {
 public:
  ZipCheckpoint(std::unique_ptr<ByteSource> src, const OpenOptions& opt) : src_(std::move(src)) {
    name_ = src_->name();
    format_ = "pytorch-zip";
    zip_error_t zerr;
    zip_error_init(&zerr);
    if (const uint8_t* mem = src_->memory()) {
      zip_source_t* zs = zip_source_buffer_create(mem, src_->size(), 0, &zerr);
      if (!zs) fail_zip("cannot read zip", &zerr);
      za_ = zip_open_from_source(zs, ZIP_RDONLY | ZIP_CHECKCONS, &zerr);
      if (!za_) {
        zip_source_free(zs);
        fail_zip("not a valid zip archive", &zerr);
      }
    } else {
      int code = 0;
      za_ = zip_open(src_->path().c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
      if (!za_) {
        zip_error_init_with_code(&zerr, code);
        fail_zip("not a valid zip archive", &zerr);
      }
    }
    zip_error_fini(&zerr);
    try {
      load(opt);
    } catch (...) {
      zip_discard(za_);
      za_ = nullptr;
      throw;
    }
    index_tensors();
  }
  ~ZipCheckpoint() override {
    if (za_) zip_discard(za_);
  }

  void read_raw(const SourceTensor& t, void* dst) const override {
    const Record& r = records_.at(t.storage);
    if (t.byte_offset > r.size || t.nbytes > r.size - t.byte_offset)
      throw Error(name_ + ": tensor '" + t.name + "' lies outside its zip record");
    zip_file_t* f = zip_fopen_index(za_, r.index, 0);
    if (!f) throw Error(name_ + ": cannot open zip record of tensor '" + t.name + "': " + zip_strerror(za_));
    try {
      uint64_t skip = t.byte_offset;
      // Stored records seek directly; compressed ones (rare for torch) are read up to the offset.
      if (skip > 0 && r.stored) {
        if (zip_fseek(f, static_cast<zip_int64_t>(skip), SEEK_SET) != 0)
          throw Error(name_ + ": cannot seek in the zip record of tensor '" + t.name + "'");
        skip = 0;
      }
      std::vector<uint8_t> scratch;
      while (skip > 0) {
        scratch.resize(static_cast<size_t>(std::min<uint64_t>(skip, 1 << 20)));
        zip_int64_t got = zip_fread(f, scratch.data(), scratch.size());
        if (got <= 0) throw Error(name_ + ": zip record of tensor '" + t.name + "' is truncated or corrupt");
        skip -= static_cast<uint64_t>(got);
      }
      auto* p = static_cast<uint8_t*>(dst);
      uint64_t left = t.nbytes;
      while (left > 0) {
        zip_int64_t got = zip_fread(f, p, static_cast<zip_uint64_t>(std::min<uint64_t>(left, uint64_t{1} << 30)));
        if (got <= 0) throw Error(name_ + ": zip record of tensor '" + t.name + "' is truncated or corrupt");
        p += got;
        left -= static_cast<uint64_t>(got);
      }
    } catch (...) {
      zip_fclose(f);
      throw;
    }
    zip_fclose(f);
  }

 private:
  struct Record {
    zip_uint64_t index;
    uint64_t size;
    bool stored;
  };

  [[noreturn]] static void fail_zip(const char* what, zip_error_t* e) {
    std::string msg = std::string(what) + ": " + zip_error_strerror(e);
    zip_error_fini(e);
    throw Error(msg);
  }

  bool stat(zip_uint64_t idx, zip_stat_t* st) const {
    zip_stat_init(st);
    if (zip_stat_index(za_, idx, 0, st) != 0) return false;
    if (!(st->valid & ZIP_STAT_SIZE) || !(st->valid & ZIP_STAT_COMP_SIZE)) return false;
    return true;
  }

  // Plausible uncompressed size of a record: stored records must fit in the archive, compressed
  // ones cannot exceed deflate's maximum ratio.
  uint64_t checked_size(zip_uint64_t idx, const std::string& what, bool* stored = nullptr) const {
    zip_stat_t st;
    if (!stat(idx, &st)) throw Error("zip record " + what + " has no size");
    const bool is_stored = (st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method == ZIP_CM_STORE;
    uint64_t limit = is_stored ? src_->size() : std::min<uint64_t>(st.comp_size, uint64_t{1} << 40) * kMaxDeflateRatio;
    if (st.size > limit) throw Error("zip record " + what + " claims an impossible size " + std::to_string(st.size));
    if (stored) *stored = is_stored;
    return st.size;
  }

  std::vector<uint8_t> read_record(zip_uint64_t idx, const std::string& what, uint64_t max_bytes) const {
    uint64_t size = checked_size(idx, what);
    if (size > max_bytes) throw Error("zip record " + what + " is too large (" + std::to_string(size) + " bytes)");
    std::vector<uint8_t> buf(static_cast<size_t>(size));
    zip_file_t* f = zip_fopen_index(za_, idx, 0);
    if (!f) throw Error("cannot open zip record " + what + ": " + zip_strerror(za_));
    size_t got_total = 0;
    while (got_total < buf.size()) {
      zip_int64_t got = zip_fread(f, buf.data() + got_total, buf.size() - got_total);
      if (got <= 0) break;
      got_total += static_cast<size_t>(got);
    }
    zip_fclose(f);
    if (got_total != buf.size()) throw Error("zip record " + what + " is truncated or corrupt");
    return buf;
  }

  void load(const OpenOptions& opt) {
    zip_int64_t n = zip_get_num_entries(za_, 0);
    std::string prefix;
    zip_int64_t pkl = -1;
    for (zip_int64_t i = 0; i < n; ++i) {
      const char* nm = zip_get_name(za_, static_cast<zip_uint64_t>(i), 0);
      if (!nm) continue;
      std::string s(nm);
      size_t slash = s.find('/');
      if (slash != std::string::npos && slash > 0 && s.compare(slash, std::string::npos, "/data.pkl") == 0) {
        prefix = s.substr(0, slash);
        pkl = i;
        break;
      }
    }
    if (pkl < 0) throw Error("zip archive has no <name>/data.pkl record: not a PyTorch checkpoint");
    zip_int64_t bo = zip_name_locate(za_, (prefix + "/byteorder").c_str(), 0);
    if (bo >= 0) {
      auto b = read_record(static_cast<zip_uint64_t>(bo), prefix + "/byteorder", 64);
      if (std::string(b.begin(), b.end()) != "little") throw Error("big-endian checkpoints are not supported");
    }
    std::vector<uint8_t> pk = read_record(static_cast<zip_uint64_t>(pkl), prefix + "/data.pkl", kMaxPickleBytes);
    ByteReader in(pk.data(), pk.size(), prefix + "/data.pkl");
    pickle::Unpickler up;
    const Object* root = up.load(in);
    const Object* dict = select_state_dict(root, opt.key, &selected_key_);
    std::map<std::string, uint32_t> slot;
    tensors_ = tensors_from_dict(dict, [&](const std::string& key) -> uint32_t {
      auto it = slot.find(key);
      if (it != slot.end()) return it->second;
      std::string rec = prefix + "/data/" + key;
      zip_int64_t idx = zip_name_locate(za_, rec.c_str(), 0);
      if (idx < 0) throw Error("zip record " + printable(rec) + " is missing");
      bool stored = false;
      uint64_t size = checked_size(static_cast<zip_uint64_t>(idx), printable(rec), &stored);
      const auto& decl = up.storages().at(key);
      if (decl.numel * src_dtype_size(decl.dtype) > size)
        throw Error("zip record " + printable(rec) + " has " + std::to_string(size) + " bytes, its storage needs " +
                    std::to_string(decl.numel * src_dtype_size(decl.dtype)));
      records_.push_back({static_cast<zip_uint64_t>(idx), size, stored});
      slot.emplace(key, static_cast<uint32_t>(records_.size() - 1));
      return static_cast<uint32_t>(records_.size() - 1);
    });
  }

  std::unique_ptr<ByteSource> src_;
  zip_t* za_ = nullptr;
  std::vector<Record> records_;
};

}  // namespace

std::unique_ptr<Checkpoint> make_zip_checkpoint(std::unique_ptr<ByteSource> src, const OpenOptions& opt) {
  return std::make_unique<ZipCheckpoint>(std::move(src), opt);
}

}  // namespace gpen::conv
