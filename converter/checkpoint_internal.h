#pragma once
// Internal to the checkpoint readers (converter/checkpoint*.cpp): finding the state dict in an
// unpickled checkpoint and turning its tensors into SourceTensors, and the two readers that
// Checkpoint::open picks between by content.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "converter/checkpoint.h"
#include "converter/pickle.h"
#include "engine/core/error.h"

namespace gpen::conv {

constexpr uint64_t kMaxElems = uint64_t{1} << 48;

using pickle::Kind;
using pickle::Object;

// At most 100 characters of `s`, control characters replaced: safe to put in a message.
std::string printable(const std::string& s);
// The dict of tensors: the one `key` names (a dotted path walks nested dicts), else the first
// found by a search that prefers the usual training-checkpoint keys; throws naming what is there.
const Object* select_state_dict(const Object* root, const std::string& key, std::string* selected);
std::string strip_module(const std::string& k);

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

// Legacy pickle stream (safetensors = false) or safetensors: storages are byte ranges of the
// input (converter/checkpoint_range.cpp).
std::unique_ptr<Checkpoint> make_range_checkpoint(std::unique_ptr<ByteSource> src, const OpenOptions& opt,
                                                  bool safetensors);
// Zip format of torch >= 1.6 (converter/checkpoint_zip.cpp).
std::unique_ptr<Checkpoint> make_zip_checkpoint(std::unique_ptr<ByteSource> src, const OpenOptions& opt);

}  // namespace gpen::conv
