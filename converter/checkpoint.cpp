// Checkpoint: opening by content (zip, legacy pickle stream, safetensors) and what every reader
// shares (lookup by name, float32 conversion). The readers: checkpoint_zip.cpp (torch >= 1.6),
// checkpoint_range.cpp (legacy torch, safetensors); the state-dict search: checkpoint_state_dict.cpp.
#include "converter/checkpoint.h"

#include <algorithm>
#include <cstring>

#include "converter/checkpoint_internal.h"
#include "engine/core/error.h"
#include "weights/half.h"

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

std::unique_ptr<Checkpoint> open_source(std::unique_ptr<ByteSource> src, const OpenOptions& opt) {
  std::string name = src->name();
  try {
    uint64_t size = src->size();
    uint8_t head[16] = {};
    src->read(0, static_cast<size_t>(std::min<uint64_t>(size, 16)), head);
    if (size >= 4 && head[0] == 'P' && head[1] == 'K' && (head[2] == 3 || head[2] == 5))
      return make_zip_checkpoint(std::move(src), opt);
    // A pickle stream opens with PROTO (0x80); a safetensors file with its header's length (u64
    // little-endian) and the header's '{', and that length's low byte may be 0x80 too: a length
    // that fits the file decides.
    const bool pickle = size >= 2 && head[0] == 0x80;
    uint64_t header = 0;
    for (int i = 7; i >= 0; --i) header = header << 8 | head[i];
    const bool safetensors = size >= 10 && head[8] == '{';
    if (safetensors && (!pickle || header <= size - 8)) return make_range_checkpoint(std::move(src), opt, true);
    if (pickle) return make_range_checkpoint(std::move(src), opt, /*safetensors=*/false);
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
