// The legacy pickle-stream format (torch < 1.6) and safetensors: storages are byte ranges of the
// input, read in place.
#include <algorithm>
#include <cstring>
#include <map>

#include "converter/checkpoint_internal.h"
#include "weights/json_parse.h"

namespace gpen::conv {

namespace {

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

}  // namespace

std::unique_ptr<Checkpoint> make_range_checkpoint(std::unique_ptr<ByteSource> src, const OpenOptions& opt,
                                                  bool safetensors) {
  return std::make_unique<RangeCheckpoint>(std::move(src), opt, safetensors);
}

}  // namespace gpen::conv
