// The restricted unpickler's objects and calls: the Object arena, dict inserts, persistent-id
// storages, the REDUCE targets and the global whitelist. The opcode loop: converter/pickle_load.cpp.
#include "converter/pickle.h"

#include <string>

#include "converter/pickle_internal.h"
#include "engine/core/error.h"

namespace gpen::conv::pickle {

namespace {

// Largest dimension, element count and offset accepted from a pickle. Far above any real
// checkpoint, far below what would overflow 64-bit byte arithmetic.
constexpr int64_t kMaxDim = int64_t{1} << 40;
constexpr uint64_t kMaxElems = uint64_t{1} << 48;

struct StorageName {
  const char* name;
  SrcDType dtype;
};
constexpr StorageName kStorages[] = {
    {"FloatStorage", SrcDType::f32},   {"HalfStorage", SrcDType::f16},   {"BFloat16Storage", SrcDType::bf16},
    {"DoubleStorage", SrcDType::f64},  {"LongStorage", SrcDType::i64},   {"IntStorage", SrcDType::i32},
    {"ShortStorage", SrcDType::i16},   {"CharStorage", SrcDType::i8},    {"ByteStorage", SrcDType::u8},
    {"BoolStorage", SrcDType::boolean},
};

}  // namespace

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::None: return "None";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::BigInt: return "int";
    case Kind::Float: return "float";
    case Kind::Str: return "str";
    case Kind::Bytes: return "bytes";
    case Kind::Tuple: return "tuple";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Global: return "global";
    case Kind::Storage: return "storage";
    case Kind::Tensor: return "tensor";
  }
  return "?";
}

const Object* Object::get(const std::string& key) const {
  if (kind != Kind::Dict || !str_index) return nullptr;
  auto it = str_index->find(key);
  return it == str_index->end() ? nullptr : entries[it->second].second;
}

Unpickler::Unpickler(Limits limits) : lim_(limits) {}
Unpickler::~Unpickler() = default;

Object* Unpickler::make(Kind k) {
  if (arena_.size() >= lim_.max_objects)
    throw Error("pickle creates more than " + std::to_string(lim_.max_objects) + " objects");
  arena_.push_back(std::make_unique<Object>());
  arena_.back()->kind = k;
  return arena_.back().get();
}

void dict_set(Object* d, Object* k, Object* v) {
  if (k->kind == Kind::Str) {
    if (!d->str_index) d->str_index = std::make_unique<std::unordered_map<std::string, size_t>>();
    auto [it, inserted] = d->str_index->emplace(k->s, d->entries.size());
    if (!inserted) {
      d->entries[it->second].second = v;
      return;
    }
  }
  d->entries.emplace_back(k, v);
}

static int64_t want_int(const Object* o, const char* what) {
  if (!o || o->kind != Kind::Int) throw Error(std::string("pickle: ") + what + " is not an integer");
  return o->i;
}

static std::vector<int64_t> want_int_tuple(const Object* o, const char* what, size_t max_rank) {
  if (!o || (o->kind != Kind::Tuple && o->kind != Kind::List))
    throw Error(std::string("pickle: tensor ") + what + " is not a tuple");
  if (o->items.size() > max_rank)
    throw Error(std::string("pickle: tensor ") + what + " has rank " + std::to_string(o->items.size()) +
                " (at most " + std::to_string(max_rank) + " supported)");
  std::vector<int64_t> v;
  for (const Object* it : o->items) {
    int64_t x = want_int(it, what);
    if (x < 0 || x > kMaxDim)
      throw Error(std::string("pickle: tensor ") + what + " value " + std::to_string(x) + " is out of range");
    v.push_back(x);
  }
  return v;
}

Object* Unpickler::persistent_load(Object* pid) {
  // ('storage', <StorageType>, key, location, numel[, view_metadata]). The location (e.g.
  // 'cuda:0') is ignored: everything is read to the host.
  if (pid->kind != Kind::Tuple || pid->items.size() < 5 || pid->items.size() > 6)
    throw Error("pickle: unsupported persistent id (expected a ('storage', type, key, location, size) tuple)");
  const auto& it = pid->items;
  if (it[0]->kind != Kind::Str || it[0]->s != "storage")
    throw Error("pickle: unsupported persistent id type (only 'storage' is known)");
  if (it[1]->kind != Kind::Global || it[1]->fn != GlobalFn::StorageType)
    throw Error("pickle: persistent id does not name a storage type");
  std::string key;
  if (it[2]->kind == Kind::Str) key = it[2]->s;
  else if (it[2]->kind == Kind::Int) key = std::to_string(it[2]->i);
  else throw Error("pickle: storage key is neither a string nor an integer");
  if (key.empty() || key.size() > 256) throw Error("pickle: storage key has an invalid length");
  int64_t numel = want_int(it[4], "storage size");
  if (numel < 0 || static_cast<uint64_t>(numel) > kMaxElems)
    throw Error("pickle: storage '" + key + "' has an out-of-range size " + std::to_string(numel));
  Object* st = make(Kind::Storage);
  st->storage_ref = std::make_unique<StorageRef>();
  st->storage_ref->root = key;
  st->storage_ref->dtype = it[1]->storage_dtype;
  st->storage_ref->root_numel = static_cast<uint64_t>(numel);
  st->storage_ref->view_offset = 0;
  st->storage_ref->view_numel = static_cast<uint64_t>(numel);
  if (it.size() == 6 && it[5]->kind != Kind::None) {
    // Legacy view metadata: (view_key, offset, view_size) into the root storage.
    const Object* vm = it[5];
    if (vm->kind != Kind::Tuple || vm->items.size() != 3) throw Error("pickle: malformed storage view metadata");
    int64_t off = want_int(vm->items[1], "storage view offset");
    int64_t sz = want_int(vm->items[2], "storage view size");
    if (off < 0 || sz < 0 || static_cast<uint64_t>(off) > static_cast<uint64_t>(numel) ||
        static_cast<uint64_t>(sz) > static_cast<uint64_t>(numel) - static_cast<uint64_t>(off))
      throw Error("pickle: storage view of '" + key + "' lies outside its storage");
    st->storage_ref->view_offset = static_cast<uint64_t>(off);
    st->storage_ref->view_numel = static_cast<uint64_t>(sz);
  }
  auto [pos, inserted] = storages_.emplace(key, StorageDecl{st->storage_ref->dtype, st->storage_ref->root_numel});
  if (!inserted && (pos->second.dtype != st->storage_ref->dtype || pos->second.numel != st->storage_ref->root_numel))
    throw Error("pickle: storage '" + key + "' is declared twice with different types or sizes");
  return st;
}

Object* Unpickler::call(Object* fn, Object* args) {
  if (fn->kind != Kind::Global) throw Error(std::string("pickle: REDUCE on a ") + kind_name(fn->kind) + ", refused");
  if (args->kind != Kind::Tuple) throw Error("pickle: REDUCE arguments are not a tuple");
  const auto& a = args->items;
  switch (fn->fn) {
    case GlobalFn::OrderedDict: {
      Object* d = make(Kind::Dict);
      d->ordered = true;
      if (a.empty()) return d;
      if (a.size() == 1 && (a[0]->kind == Kind::List || a[0]->kind == Kind::Tuple)) {
        for (Object* pair : a[0]->items) {
          if (pair->kind != Kind::Tuple && pair->kind != Kind::List) throw Error("pickle: OrderedDict item is not a pair");
          if (pair->items.size() != 2) throw Error("pickle: OrderedDict item is not a pair");
          dict_set(d, pair->items[0], pair->items[1]);
        }
        return d;
      }
      throw Error("pickle: unsupported OrderedDict arguments");
    }
    case GlobalFn::RebuildTensorV2:
    case GlobalFn::RebuildTensor: {
      size_t lo = fn->fn == GlobalFn::RebuildTensor ? 4 : 6, hi = fn->fn == GlobalFn::RebuildTensor ? 4 : 7;
      if (a.size() < lo || a.size() > hi)
        throw Error("pickle: " + fn->s + " called with " + std::to_string(a.size()) + " arguments");
      if (a[0]->kind != Kind::Storage) throw Error("pickle: " + fn->s + ": first argument is not a storage");
      Object* t = make(Kind::Tensor);
      t->tensor_ref = std::make_unique<TensorRef>();
      t->tensor_ref->storage = a[0];
      t->tensor_ref->storage_offset = want_int(a[1], "storage offset");
      if (t->tensor_ref->storage_offset < 0 || static_cast<uint64_t>(t->tensor_ref->storage_offset) > kMaxElems)
        throw Error("pickle: tensor storage offset " + std::to_string(t->tensor_ref->storage_offset) + " is out of range");
      t->tensor_ref->size = want_int_tuple(a[2], "size", lim_.max_rank);
      t->tensor_ref->stride = want_int_tuple(a[3], "stride", lim_.max_rank);
      if (t->tensor_ref->size.size() != t->tensor_ref->stride.size())
        throw Error("pickle: tensor size and stride have different ranks");
      return t;
    }
    case GlobalFn::RebuildParameter:
    case GlobalFn::RebuildParameterWithState:
      if (a.size() < 3 || a.size() > 4 || a[0]->kind != Kind::Tensor)
        throw Error("pickle: " + fn->s + ": unexpected arguments");
      return a[0];
    case GlobalFn::StorageType: break;
  }
  throw Error("pickle: refusing to call " + fn->s);
}

Object* resolve_global(Object* g, const std::string& module, const std::string& name) {
  g->s = module + "." + name;
  if (module == "collections" && name == "OrderedDict") {
    g->fn = GlobalFn::OrderedDict;
    return g;
  }
  if (module == "torch._utils") {
    if (name == "_rebuild_tensor_v2") { g->fn = GlobalFn::RebuildTensorV2; return g; }
    if (name == "_rebuild_tensor") { g->fn = GlobalFn::RebuildTensor; return g; }
    if (name == "_rebuild_parameter") { g->fn = GlobalFn::RebuildParameter; return g; }
    if (name == "_rebuild_parameter_with_state") { g->fn = GlobalFn::RebuildParameterWithState; return g; }
  }
  if (module == "torch") {
    for (const auto& s : kStorages)
      if (name == s.name) {
        g->fn = GlobalFn::StorageType;
        g->storage_dtype = s.dtype;
        return g;
      }
  }
  std::string shown = g->s.size() > 80 ? g->s.substr(0, 80) + "..." : g->s;
  for (char& c : shown)
    if (static_cast<unsigned char>(c) < 32 || static_cast<unsigned char>(c) > 126) c = '?';
  throw Error("pickle: refusing unsupported global '" + shown +
              "' (only state dicts of tensors can be read; nothing in a checkpoint is executed)");
}

}  // namespace gpen::conv::pickle
