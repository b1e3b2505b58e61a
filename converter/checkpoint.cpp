#include "converter/checkpoint.h"

#include <zip.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "converter/pickle.h"
#include "engine/core/error.h"
#include "weights/half.h"
#include "weights/json_parse.h"

namespace gpen::conv {

const char* src_dtype_name(SrcDType t) {
  switch (t) {
    case SrcDType::f32: return "float32";
    case SrcDType::f16: return "float16";
    case SrcDType::bf16: return "bfloat16";
    case SrcDType::f64: return "float64";
    case SrcDType::i64: return "int64";
    case SrcDType::i32: return "int32";
    case SrcDType::i16: return "int16";
    case SrcDType::i8: return "int8";
    case SrcDType::u8: return "uint8";
    case SrcDType::boolean: return "bool";
  }
  return "?";
}

std::string SourceTensor::shape_str() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {

constexpr uint64_t kMaxElems = uint64_t{1} << 48;
constexpr uint64_t kMaxPickleBytes = uint64_t{256} << 20;
// Deflate cannot expand data more than ~1032x; a larger claimed size is a lie.
constexpr uint64_t kMaxDeflateRatio = 1100;

using pickle::Kind;
using pickle::Object;

// Keys under which training checkpoints nest their weights, best first (EMA weights beat raw).
const char* const kPreferredKeys[] = {"params_ema", "g_ema", "state_dict", "params", "model_state_dict",
                                      "model", "net", "network", "generator", "netG", "module"};

bool is_tensor_dict(const Object* o) {
  if (!o || o->kind != Kind::Dict || o->entries.empty()) return false;
  bool any = false;
  for (const auto& [k, v] : o->entries) {
    if (k->kind != Kind::Str) return false;
    if (v->kind == Kind::Tensor) any = true;
    else if (v->kind != Kind::None) return false;
  }
  return any;
}

const Object* find_tensor_dict(const Object* o, int depth, const std::string& path, std::string* found) {
  if (is_tensor_dict(o)) {
    *found = path;
    return o;
  }
  if (!o || o->kind != Kind::Dict || depth >= 8) return nullptr;
  auto join = [&](const std::string& k) { return path.empty() ? k : path + "." + k; };
  for (const char* key : kPreferredKeys)
    if (const Object* child = o->get(key))
      if (const Object* r = find_tensor_dict(child, depth + 1, join(key), found)) return r;
  for (const auto& [k, v] : o->entries)
    if (k->kind == Kind::Str && v->kind == Kind::Dict)
      if (const Object* r = find_tensor_dict(v, depth + 1, join(k->s), found)) return r;
  return nullptr;
}

std::string printable(const std::string& s) {
  std::string r = s.size() > 100 ? s.substr(0, 100) + "..." : s;
  for (char& c : r)
    if (static_cast<unsigned char>(c) < 32 || c == 127) c = '?';
  return r;
}

std::string list_keys(const Object* d) {
  std::string s;
  int n = 0;
  for (const auto& [k, v] : d->entries) {
    if (k->kind != Kind::Str) continue;
    if (n++ == 8) return s + ", ...";
    s += (s.empty() ? "" : ", ") + printable(k->s);
  }
  return s.empty() ? "none" : s;
}

const Object* select_state_dict(const Object* root, const std::string& key, std::string* selected) {
  if (!key.empty()) {
    const Object* cur = root;
    std::string walked;
    if (cur && cur->get(key)) {
      cur = cur->get(key);
      walked = key;
    } else {
      size_t start = 0;
      while (start <= key.size()) {
        size_t dot = key.find('.', start);
        std::string part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        if (!cur || cur->kind != Kind::Dict)
          throw Error("--key " + printable(key) + ": '" + printable(walked) + "' is not a dict");
        const Object* next = cur->get(part);
        if (!next)
          throw Error("--key " + printable(key) + ": no key '" + printable(part) + "' (available: " + list_keys(cur) + ")");
        cur = next;
        walked += (walked.empty() ? "" : ".") + part;
        if (dot == std::string::npos) break;
        start = dot + 1;
      }
    }
    if (!is_tensor_dict(cur)) throw Error("--key " + printable(key) + " does not name a dict of tensors");
    *selected = key;
    return cur;
  }
  const Object* d = find_tensor_dict(root, 0, "", selected);
  if (!d) {
    if (root && root->kind == Kind::Dict)
      throw Error("no dict of tensors found in the checkpoint (top-level keys: " + list_keys(root) + "); use --key");
    throw Error(std::string("the checkpoint holds a ") + kind_name(root ? root->kind : Kind::None) +
                ", not a state dict of tensors");
  }
  return d;
}

std::string strip_module(const std::string& k) {
  return k.rfind("module.", 0) == 0 ? k.substr(7) : k;
}

// Builds SourceTensors from a pickled state dict; `storage_index` maps a storage root key to the
// reader's storage slot and checks that slot exists.
template <class IndexFn>
std::vector<SourceTensor> tensors_from_dict(const Object* dict, IndexFn storage_index) {
  std::vector<SourceTensor> out;
  std::map<std::string, bool> seen;
  for (const auto& [k, v] : dict->entries) {
    if (v->kind != Kind::Tensor) continue;
    const pickle::TensorRef& tr = v->tensor();
    const pickle::StorageRef& st = tr.storage->storage();
    SourceTensor t;
    t.name = strip_module(k->s);
    if (t.name.empty() || t.name.size() > 512) throw Error("tensor name '" + printable(k->s) + "' is invalid");
    if (!seen.emplace(t.name, true).second)
      throw Error("tensor '" + printable(t.name) + "' appears twice (after stripping 'module.')");
    t.dtype = st.dtype;
    t.shape = tr.size;
    uint64_t n = 1;
    for (int64_t d : t.shape) {
      if (d != 0 && n > kMaxElems / static_cast<uint64_t>(d))
        throw Error("tensor '" + printable(t.name) + "' has an absurd shape " + t.shape_str());
      n *= static_cast<uint64_t>(d);
    }
    t.numel = n;
    t.nbytes = n * src_dtype_size(t.dtype);
    if (n > 0) {
      // Dense row-major only: a permuted or sliced view would need a gather the engine does not
      // want to guess at.
      int64_t expect = 1;
      for (size_t i = t.shape.size(); i-- > 0;) {
        if (t.shape[i] != 1 && tr.stride[i] != expect) {
          std::string strides = "[";
          for (size_t j = 0; j < tr.stride.size(); ++j) strides += (j ? ", " : "") + std::to_string(tr.stride[j]);
          throw Error("tensor '" + printable(t.name) + "' " + t.shape_str() + " is not contiguous (strides " + strides +
                      "]); save it with .contiguous()");
        }
        expect *= t.shape[i];
      }
      uint64_t off = static_cast<uint64_t>(tr.storage_offset);
      if (off > st.view_numel || n > st.view_numel - off)
        throw Error("tensor '" + printable(t.name) + "' " + t.shape_str() + " at offset " + std::to_string(off) +
                    " extends past its storage of " + std::to_string(st.view_numel) + " elements");
    }
    t.storage = storage_index(st.root);
    t.byte_offset = (st.view_offset + static_cast<uint64_t>(tr.storage_offset)) * src_dtype_size(t.dtype);
    out.push_back(std::move(t));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Legacy pickle stream and safetensors: storages are byte ranges of the input.

class RangeCheckpoint final : public Checkpoint {
 public:
  struct Range {
    uint64_t offset, bytes;
  };
  RangeCheckpoint(std::unique_ptr<ByteSource> src, const OpenOptions& opt, bool safetensors) : src_(std::move(src)) {
    name_ = src_->name();
    if (safetensors) load_safetensors(opt);
    else load_legacy(opt);
    index_tensors();
  }
  void read_raw(const SourceTensor& t, void* dst) const override {
    const Range& r = ranges_.at(t.storage);
    if (t.byte_offset > r.bytes || t.nbytes > r.bytes - t.byte_offset)
      throw Error(name_ + ": tensor '" + t.name + "' lies outside its storage");
    src_->read(r.offset + t.byte_offset, static_cast<size_t>(t.nbytes), dst);
  }

 private:
  void load_legacy(const OpenOptions& opt) {
    format_ = "pytorch-legacy";
    ByteReader in(*src_, 0, src_->size());
    pickle::Unpickler up;
    const Object* magic = up.load(in);
    static const uint8_t kMagic[10] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
    if (magic->kind != Kind::BigInt || magic->s.size() != 10 || std::memcmp(magic->s.data(), kMagic, 10) != 0)
      throw Error("not a PyTorch checkpoint: the legacy format's magic number is missing");
    const Object* proto = up.load(in);
    if (proto->kind != Kind::Int || proto->i != 1001)
      throw Error("unsupported legacy checkpoint protocol version");
    const Object* sys = up.load(in);
    if (sys->kind != Kind::Dict) throw Error("legacy checkpoint: malformed system info");
    if (const Object* le = sys->get("little_endian"))
      if (le->kind == Kind::Bool && !le->b) throw Error("big-endian checkpoints are not supported");
    const Object* root = up.load(in);
    const Object* keys = up.load(in);
    if (keys->kind != Kind::List) throw Error("legacy checkpoint: storage key list is missing");
    // Storages follow in key order, each as an int64 element count and the raw elements.
    uint64_t pos = in.position();
    std::map<std::string, uint32_t> slot;
    for (const Object* k : keys->items) {
      if (k->kind != Kind::Str) throw Error("legacy checkpoint: storage key is not a string");
      auto decl = up.storages().find(k->s);
      if (decl == up.storages().end())
        throw Error("legacy checkpoint: storage '" + printable(k->s) + "' is not referenced by the pickle");
      uint8_t hdr[8];
      src_->read(pos, 8, hdr);
      uint64_t numel = 0;
      for (int b = 7; b >= 0; --b) numel = (numel << 8) | hdr[b];
      if (numel != decl->second.numel)
        throw Error("legacy checkpoint: storage '" + printable(k->s) + "' holds " + std::to_string(numel) +
                    " elements, the pickle declares " + std::to_string(decl->second.numel));
      uint64_t bytes = numel * src_dtype_size(decl->second.dtype);
      uint64_t start = pos + 8;
      if (start > src_->size() || bytes > src_->size() - start)
        throw Error("legacy checkpoint: storage '" + printable(k->s) + "' extends past the end of the file (truncated?)");
      if (!slot.emplace(k->s, static_cast<uint32_t>(ranges_.size())).second)
        throw Error("legacy checkpoint: storage '" + printable(k->s) + "' is listed twice");
      ranges_.push_back({start, bytes});
      pos = start + bytes;
    }
    const Object* dict = select_state_dict(root, opt.key, &selected_key_);
    tensors_ = tensors_from_dict(dict, [&](const std::string& root_key) {
      auto it = slot.find(root_key);
      if (it == slot.end()) throw Error("legacy checkpoint: data of storage '" + printable(root_key) + "' is missing");
      return it->second;
    });
  }

  void load_safetensors(const OpenOptions& opt) {
    format_ = "safetensors";
    uint64_t size = src_->size();
    uint8_t hdr[8];
    src_->read(0, 8, hdr);
    uint64_t n = 0;
    for (int b = 7; b >= 0; --b) n = (n << 8) | hdr[b];
    if (n < 2 || n > size - 8 || n > (uint64_t{100} << 20))
      throw Error("safetensors header length " + std::to_string(n) + " is invalid for a " + std::to_string(size) +
                  "-byte file");
    std::string text(static_cast<size_t>(n), '\0');
    src_->read(8, text.size(), text.data());
    auto j = parse_untrusted_json(text.data(), text.size(), "safetensors header", 4);
    if (!j.is_object()) throw Error("safetensors header is not a JSON object");
    uint64_t data_start = 8 + n, data_size = size - data_start;
    ranges_.push_back({data_start, data_size});
    std::string prefix = opt.key.empty() ? "" : opt.key + ".";
    std::map<std::string, bool> seen;
    for (auto& [key, v] : j.items()) {
      if (key == "__metadata__") continue;
      if (!prefix.empty() && key.rfind(prefix, 0) != 0) continue;
      SourceTensor t;
      t.name = strip_module(key.substr(prefix.size()));
      if (t.name.empty() || t.name.size() > 512) throw Error("safetensors: tensor name '" + printable(key) + "' is invalid");
      if (!seen.emplace(t.name, true).second) throw Error("safetensors: tensor '" + printable(t.name) + "' appears twice");
      if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets") ||
          !v["dtype"].is_string() || !v["shape"].is_array() || !v["data_offsets"].is_array() ||
          v["data_offsets"].size() != 2)
        throw Error("safetensors: entry '" + printable(key) + "' lacks dtype, shape or data_offsets");
      static const std::map<std::string, SrcDType> kTypes = {
          {"F32", SrcDType::f32}, {"F16", SrcDType::f16}, {"BF16", SrcDType::bf16}, {"F64", SrcDType::f64},
          {"I64", SrcDType::i64}, {"I32", SrcDType::i32}, {"I16", SrcDType::i16},   {"I8", SrcDType::i8},
          {"U8", SrcDType::u8},   {"BOOL", SrcDType::boolean}};
      auto dt = kTypes.find(v["dtype"].get<std::string>());
      if (dt == kTypes.end())
        throw Error("safetensors: tensor '" + printable(key) + "' has unsupported dtype " +
                    printable(v["dtype"].get<std::string>()));
      t.dtype = dt->second;
      if (v["shape"].size() > 8) throw Error("safetensors: tensor '" + printable(key) + "' has too many dimensions");
      uint64_t numel = 1;
      for (const auto& d : v["shape"]) {
        if (!d.is_number_unsigned()) throw Error("safetensors: tensor '" + printable(key) + "' has an invalid shape");
        uint64_t x = d.get<uint64_t>();
        if (x > (uint64_t{1} << 40) || (x != 0 && numel > kMaxElems / x))
          throw Error("safetensors: tensor '" + printable(key) + "' has an absurd shape");
        t.shape.push_back(static_cast<int64_t>(x));
        numel *= x;
      }
      const auto& offs = v["data_offsets"];
      if (!offs[0].is_number_unsigned() || !offs[1].is_number_unsigned())
        throw Error("safetensors: tensor '" + printable(key) + "' has invalid data_offsets");
      uint64_t b = offs[0].get<uint64_t>(), e = offs[1].get<uint64_t>();
      if (b > e || e > data_size)
        throw Error("safetensors: tensor '" + printable(key) + "' data_offsets [" + std::to_string(b) + ", " +
                    std::to_string(e) + "] lie outside the " + std::to_string(data_size) + "-byte data section");
      t.numel = numel;
      t.nbytes = numel * src_dtype_size(t.dtype);
      if (e - b != t.nbytes)
        throw Error("safetensors: tensor '" + printable(key) + "' has " + std::to_string(e - b) + " bytes, its shape needs " +
                    std::to_string(t.nbytes));
      t.storage = 0;
      t.byte_offset = b;
      tensors_.push_back(std::move(t));
    }
    // nlohmann sorts object keys; the data order is the file's own order.
    std::stable_sort(tensors_.begin(), tensors_.end(),
                     [](const SourceTensor& a, const SourceTensor& b) { return a.byte_offset < b.byte_offset; });
    if (tensors_.empty())
      throw Error(prefix.empty() ? "safetensors file holds no tensors" : "no tensors named '" + printable(prefix) + "*'");
    selected_key_ = opt.key;
  }

  std::unique_ptr<ByteSource> src_;
  std::vector<Range> ranges_;
};

// ---------------------------------------------------------------------------------------------
// Zip format (torch >= 1.6): <prefix>/data.pkl plus one record <prefix>/data/<key> per storage.

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

std::unique_ptr<Checkpoint> open_source(std::unique_ptr<ByteSource> src, const OpenOptions& opt) {
  std::string name = src->name();
  try {
    uint64_t size = src->size();
    uint8_t head[16] = {};
    src->read(0, static_cast<size_t>(std::min<uint64_t>(size, 16)), head);
    if (size >= 4 && head[0] == 'P' && head[1] == 'K' && (head[2] == 3 || head[2] == 5))
      return std::make_unique<ZipCheckpoint>(std::move(src), opt);
    if (size >= 2 && head[0] == 0x80)
      return std::make_unique<RangeCheckpoint>(std::move(src), opt, /*safetensors=*/false);
    if (size >= 10 && head[8] == '{') return std::make_unique<RangeCheckpoint>(std::move(src), opt, true);
    if (size >= 512) {
      uint8_t tar[6] = {};
      src->read(257, 5, tar);
      if (std::memcmp(tar, "ustar", 5) == 0)
        throw Error("tar-format checkpoints (torch < 0.1.10) are not supported");
    }
    throw Error("not a PyTorch checkpoint (zip or legacy) or a safetensors file");
  } catch (const Error& e) {
    throw Error(name + ": " + e.what());
  } catch (const std::bad_alloc&) {
    throw Error(name + ": out of memory while reading the checkpoint");
  }
}

}  // namespace

std::unique_ptr<Checkpoint> Checkpoint::open(const std::string& path, const OpenOptions& opt) {
  return open_source(open_file_source(path), opt);
}

std::unique_ptr<Checkpoint> Checkpoint::open_memory(const uint8_t* data, size_t size, const std::string& name,
                                                    const OpenOptions& opt) {
  return open_source(memory_source(data, size, name), opt);
}

void Checkpoint::index_tensors() {
  sorted_.clear();
  for (size_t i = 0; i < tensors_.size(); ++i) sorted_.emplace_back(tensors_[i].name, i);
  std::sort(sorted_.begin(), sorted_.end());
}

const SourceTensor* Checkpoint::find(const std::string& n) const {
  auto it = std::lower_bound(sorted_.begin(), sorted_.end(), std::make_pair(n, size_t{0}));
  return it != sorted_.end() && it->first == n ? &tensors_[it->second] : nullptr;
}

std::vector<float> Checkpoint::read_f32(const SourceTensor& t) const {
  if (!src_dtype_is_float(t.dtype))
    throw Error(name_ + ": tensor '" + t.name + "' is " + src_dtype_name(t.dtype) + ", expected floating point");
  std::vector<float> out(static_cast<size_t>(t.numel));
  if (t.dtype == SrcDType::f32) {
    read_raw(t, out.data());
    return out;
  }
  std::vector<uint8_t> raw(static_cast<size_t>(t.nbytes));
  read_raw(t, raw.data());
  const size_t n = out.size();
  switch (t.dtype) {
    case SrcDType::f16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, raw.data() + 2 * i, 2);
        out[i] = f16_to_f32(h);
      }
      break;
    case SrcDType::bf16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, raw.data() + 2 * i, 2);
        out[i] = bf16_to_f32(h);
      }
      break;
    case SrcDType::f64:
      for (size_t i = 0; i < n; ++i) {
        double d;
        std::memcpy(&d, raw.data() + 8 * i, 8);
        out[i] = static_cast<float>(d);
      }
      break;
    default: break;
  }
  return out;
}

}  // namespace gpen::conv
