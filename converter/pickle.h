#pragma once
// A restricted pickle interpreter: enough of the protocol for PyTorch state dicts, nothing that
// executes code. Globals are resolved against a fixed whitelist (OrderedDict, the tensor rebuild
// functions, the storage types); anything else is refused with a message. The checkpoint is
// untrusted input: every length, index and count is bounded before it is used.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "converter/byte_source.h"
#include "converter/src_dtype.h"

namespace gpen::conv::pickle {

enum class Kind : uint8_t { None, Bool, Int, BigInt, Float, Str, Bytes, Tuple, List, Dict, Global, Storage, Tensor };
const char* kind_name(Kind k);

// What a whitelisted global stands for.
enum class GlobalFn : uint8_t {
  OrderedDict,
  RebuildTensorV2,
  RebuildTensor,
  RebuildParameter,
  RebuildParameterWithState,
  StorageType,
};

struct Object;

// One persistent-id storage reference. `root` names the serialized storage (the zip record name
// or the legacy storage key); a legacy view into it starts `view_offset` elements in.
struct StorageRef {
  std::string root;
  SrcDType dtype = SrcDType::f32;
  uint64_t root_numel = 0;
  uint64_t view_offset = 0;
  uint64_t view_numel = 0;
};

struct TensorRef {
  const Object* storage = nullptr;  // Kind::Storage
  int64_t storage_offset = 0;       // elements, into the (view of the) storage
  std::vector<int64_t> size;
  std::vector<int64_t> stride;
};

// Objects live in the interpreter's arena and point at each other with raw pointers, so cyclic
// structures (a list appended to itself) cost nothing to free and cannot leak.
struct Object {
  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;                     // Str, Bytes, BigInt (two's-complement LE bytes), Global "module.name"
  GlobalFn fn = GlobalFn::OrderedDict;
  SrcDType storage_dtype = SrcDType::f32;  // Global StorageType
  std::vector<Object*> items;        // Tuple, List
  std::vector<std::pair<Object*, Object*>> entries;  // Dict, insertion order
  bool ordered = false;              // Dict built from collections.OrderedDict
  // Rarely-needed parts live behind pointers to keep every object small: the object budget
  // bounds memory at roughly max_objects * sizeof(Object).
  std::unique_ptr<std::unordered_map<std::string, size_t>> str_index;  // Dict: string key -> entries index
  std::unique_ptr<StorageRef> storage_ref;  // Kind::Storage
  std::unique_ptr<TensorRef> tensor_ref;    // Kind::Tensor

  const StorageRef& storage() const { return *storage_ref; }
  const TensorRef& tensor() const { return *tensor_ref; }
  const Object* get(const std::string& key) const;  // Dict lookup by string key, null if absent
};

struct Limits {
  size_t max_objects = size_t{1} << 20;  // real state dicts need a few thousand
  size_t max_string = size_t{64} << 20;
  size_t max_rank = 8;
};

class Unpickler {
 public:
  explicit Unpickler(Limits limits = {});
  ~Unpickler();
  Unpickler(const Unpickler&) = delete;
  Unpickler& operator=(const Unpickler&) = delete;

  // Runs one pickle from the reader's position through its STOP opcode. Objects stay valid for
  // the Unpickler's lifetime; several pickles can be loaded in a row (the legacy format).
  const Object* load(ByteReader& in);

  // Every storage the pickles referenced, by root key (its dtype and element count).
  struct StorageDecl {
    SrcDType dtype;
    uint64_t numel;
  };
  const std::map<std::string, StorageDecl>& storages() const { return storages_; }

 private:
  Object* make(Kind k);
  Object* persistent_load(Object* pid);
  Object* call(Object* fn, Object* args);

  Limits lim_;
  std::vector<std::unique_ptr<Object>> arena_;
  std::map<std::string, StorageDecl> storages_;
};

}  // namespace gpen::conv::pickle
