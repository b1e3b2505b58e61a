#include "converter/pickle.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "engine/core/error.h"

namespace gpen::conv::pickle {

namespace {

// Largest dimension, element count and offset accepted from a pickle. Far above any real
// checkpoint, far below what would overflow 64-bit byte arithmetic.
constexpr int64_t kMaxDim = int64_t{1} << 40;
constexpr uint64_t kMaxElems = uint64_t{1} << 48;

std::string hex_op(uint8_t op) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", op);
  return buf;
}

const char* opcode_name(uint8_t op) {
  switch (op) {
    case 'i': return "INST";
    case 'o': return "OBJ";
    case 0x82: case 0x83: case 0x84: return "EXT";
    case 'P': return "PERSID";
    case 0x92: return "NEWOBJ_EX";
    case 0x8f: return "EMPTY_SET";
    case 0x90: return "ADDITEMS";
    case 0x91: return "FROZENSET";
    case 0x96: return "BYTEARRAY8";
    case 0x97: return "NEXT_BUFFER";
    case 0x98: return "READONLY_BUFFER";
    case 'S': return "STRING";
    case 'V': return "UNICODE";
    case 'F': return "FLOAT";
    case 'L': return "LONG";
    default: return "unknown";
  }
}

uint32_t le32(const uint8_t* p) { return p[0] | (p[1] << 8) | (p[2] << 16) | (uint32_t(p[3]) << 24); }
uint64_t le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int k = 7; k >= 0; --k) v = (v << 8) | p[k];
  return v;
}

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

static void dict_set(Object* d, Object* k, Object* v) {
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

static Object* resolve_global(Object* g, const std::string& module, const std::string& name) {
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

const Object* Unpickler::load(ByteReader& in) {
  std::vector<Object*> stack;
  std::vector<size_t> marks;
  std::unordered_map<uint64_t, Object*> memo;

  auto pop = [&]() -> Object* {
    if (stack.empty() || (!marks.empty() && stack.size() <= marks.back()))
      throw Error("pickle: stack underflow at byte " + std::to_string(in.position()));
    Object* o = stack.back();
    stack.pop_back();
    return o;
  };
  auto top = [&]() -> Object* {
    if (stack.empty() || (!marks.empty() && stack.size() <= marks.back()))
      throw Error("pickle: stack underflow at byte " + std::to_string(in.position()));
    return stack.back();
  };
  auto pop_mark = [&]() -> std::vector<Object*> {
    if (marks.empty()) throw Error("pickle: MARK expected at byte " + std::to_string(in.position()));
    size_t m = marks.back();
    marks.pop_back();
    std::vector<Object*> items(stack.begin() + static_cast<std::ptrdiff_t>(m), stack.end());
    stack.resize(m);
    return items;
  };
  auto push = [&](Object* o) {
    if (stack.size() >= lim_.max_objects) throw Error("pickle: stack too deep");
    stack.push_back(o);
  };
  auto memo_put = [&](uint64_t idx) {
    if (stack.empty()) throw Error("pickle: memo store with an empty stack");
    if (memo.size() >= lim_.max_objects) throw Error("pickle: memo too large");
    memo[idx] = stack.back();
  };
  auto memo_get = [&](uint64_t idx) {
    auto it = memo.find(idx);
    if (it == memo.end()) throw Error("pickle: memo key " + std::to_string(idx) + " is not defined");
    push(it->second);
  };
  auto readline = [&]() {
    std::string s;
    for (;;) {
      char c = static_cast<char>(in.byte());
      if (c == '\n') return s;
      if (s.size() >= 256) throw Error("pickle: text argument too long");
      s.push_back(c);
    }
  };
  auto string_obj = [&](Kind k, uint64_t len) {
    if (len > lim_.max_string) throw Error("pickle: string of " + std::to_string(len) + " bytes is too long");
    const uint8_t* p = in.take(static_cast<size_t>(len));
    Object* o = make(k);
    o->s.assign(reinterpret_cast<const char*>(p), static_cast<size_t>(len));
    push(o);
  };
  auto int_obj = [&](int64_t v) {
    Object* o = make(Kind::Int);
    o->i = v;
    push(o);
  };
  auto long_obj = [&](uint64_t n) {
    if (n > 1024) throw Error("pickle: integer of " + std::to_string(n) + " bytes is too long");
    const uint8_t* p = in.take(static_cast<size_t>(n));
    if (n <= 8) {
      uint64_t v = 0;
      for (size_t k = 0; k < n; ++k) v |= uint64_t(p[k]) << (8 * k);
      if (n > 0 && n < 8 && (p[n - 1] & 0x80)) v |= ~uint64_t{0} << (8 * n);  // sign-extend
      int_obj(static_cast<int64_t>(v));
    } else {
      Object* o = make(Kind::BigInt);
      o->s.assign(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
      push(o);
    }
  };

  for (;;) {
    uint64_t at = in.position();
    uint8_t op = in.byte();
    switch (op) {
      case 0x80: {  // PROTO
        uint8_t v = in.byte();
        if (v > 5) throw Error("pickle: unsupported protocol " + std::to_string(v));
        break;
      }
      case 0x95: in.take(8); break;  // FRAME: framing is only a read-ahead hint
      case '.': {                    // STOP
        if (stack.size() != 1 || !marks.empty())
          throw Error("pickle: STOP with " + std::to_string(stack.size()) + " objects on the stack");
        return stack.back();
      }
      case '(': marks.push_back(stack.size()); break;  // MARK
      case '0': pop(); break;                          // POP
      case '1': pop_mark(); break;                     // POP_MARK
      case '2': push(top()); break;                    // DUP
      case 'N': push(make(Kind::None)); break;
      case 0x88: case 0x89: {  // NEWTRUE / NEWFALSE
        Object* o = make(Kind::Bool);
        o->b = op == 0x88;
        push(o);
        break;
      }
      case 'K': int_obj(in.byte()); break;  // BININT1
      case 'M': {                           // BININT2
        const uint8_t* p = in.take(2);
        int_obj(p[0] | (p[1] << 8));
        break;
      }
      case 'J': int_obj(static_cast<int32_t>(le32(in.take(4)))); break;  // BININT
      case 0x8a: long_obj(in.byte()); break;                             // LONG1
      case 0x8b: long_obj(le32(in.take(4))); break;                      // LONG4
      case 'I': {                                                        // INT (text)
        std::string s = readline();
        if (s == "01" || s == "00") {
          Object* o = make(Kind::Bool);
          o->b = s == "01";
          push(o);
          break;
        }
        char* end = nullptr;
        errno = 0;
        long long v = std::strtoll(s.c_str(), &end, 10);
        if (s.empty() || *end != '\0' || errno) throw Error("pickle: malformed INT argument");
        int_obj(v);
        break;
      }
      case 'G': {  // BINFLOAT, big-endian
        const uint8_t* p = in.take(8);
        uint64_t bits = 0;
        for (int k = 0; k < 8; ++k) bits = (bits << 8) | p[k];
        Object* o = make(Kind::Float);
        std::memcpy(&o->f, &bits, 8);
        push(o);
        break;
      }
      case 'X': string_obj(Kind::Str, le32(in.take(4))); break;    // BINUNICODE
      case 0x8c: string_obj(Kind::Str, in.byte()); break;          // SHORT_BINUNICODE
      case 0x8d: string_obj(Kind::Str, le64(in.take(8))); break;   // BINUNICODE8
      case 'T': string_obj(Kind::Str, le32(in.take(4))); break;    // BINSTRING (py2 str)
      case 'U': string_obj(Kind::Str, in.byte()); break;           // SHORT_BINSTRING
      case 'B': string_obj(Kind::Bytes, le32(in.take(4))); break;  // BINBYTES
      case 'C': string_obj(Kind::Bytes, in.byte()); break;         // SHORT_BINBYTES
      case 0x8e: string_obj(Kind::Bytes, le64(in.take(8))); break; // BINBYTES8
      case ')': push(make(Kind::Tuple)); break;                    // EMPTY_TUPLE
      case ']': push(make(Kind::List)); break;                     // EMPTY_LIST
      case '}': push(make(Kind::Dict)); break;                     // EMPTY_DICT
      case 't': case 'l': {                                        // TUPLE / LIST
        auto items = pop_mark();
        Object* o = make(op == 't' ? Kind::Tuple : Kind::List);
        o->items = std::move(items);
        push(o);
        break;
      }
      case 0x85: case 0x86: case 0x87: {  // TUPLE1..3
        size_t n = op - 0x84u;
        Object* o = make(Kind::Tuple);
        o->items.resize(n);
        for (size_t k = n; k-- > 0;) o->items[k] = pop();
        push(o);
        break;
      }
      case 'd': {  // DICT
        auto items = pop_mark();
        if (items.size() % 2) throw Error("pickle: DICT with an odd number of items");
        Object* d = make(Kind::Dict);
        for (size_t k = 0; k < items.size(); k += 2) dict_set(d, items[k], items[k + 1]);
        push(d);
        break;
      }
      case 'a': {  // APPEND
        Object* v = pop();
        Object* l = top();
        if (l->kind != Kind::List) throw Error(std::string("pickle: APPEND to a ") + kind_name(l->kind));
        l->items.push_back(v);
        break;
      }
      case 'e': {  // APPENDS
        auto items = pop_mark();
        Object* l = top();
        if (l->kind != Kind::List) throw Error(std::string("pickle: APPENDS to a ") + kind_name(l->kind));
        l->items.insert(l->items.end(), items.begin(), items.end());
        break;
      }
      case 's': {  // SETITEM
        Object* v = pop();
        Object* k = pop();
        Object* d = top();
        if (d->kind != Kind::Dict) throw Error(std::string("pickle: SETITEM on a ") + kind_name(d->kind));
        dict_set(d, k, v);
        break;
      }
      case 'u': {  // SETITEMS
        auto items = pop_mark();
        Object* d = top();
        if (d->kind != Kind::Dict) throw Error(std::string("pickle: SETITEMS on a ") + kind_name(d->kind));
        if (items.size() % 2) throw Error("pickle: SETITEMS with an odd number of items");
        for (size_t k = 0; k < items.size(); k += 2) dict_set(d, items[k], items[k + 1]);
        break;
      }
      case 'q': memo_put(in.byte()); break;              // BINPUT
      case 'r': memo_put(le32(in.take(4))); break;       // LONG_BINPUT
      case 0x94: memo_put(memo.size()); break;           // MEMOIZE
      case 'h': memo_get(in.byte()); break;              // BINGET
      case 'j': memo_get(le32(in.take(4))); break;       // LONG_BINGET
      case 'p': case 'g': {                              // PUT / GET (text)
        std::string s = readline();
        char* end = nullptr;
        errno = 0;
        unsigned long long v = std::strtoull(s.c_str(), &end, 10);
        if (s.empty() || *end != '\0' || errno) throw Error("pickle: malformed memo index");
        if (op == 'p') memo_put(v);
        else memo_get(v);
        break;
      }
      case 'c': {  // GLOBAL
        std::string module = readline();
        std::string name = readline();
        push(resolve_global(make(Kind::Global), module, name));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        Object* name = pop();
        Object* module = pop();
        if (name->kind != Kind::Str || module->kind != Kind::Str) throw Error("pickle: STACK_GLOBAL needs two strings");
        push(resolve_global(make(Kind::Global), module->s, name->s));
        break;
      }
      case 'R': {  // REDUCE
        Object* args = pop();
        Object* fn = pop();
        push(call(fn, args));
        break;
      }
      case 0x81: {  // NEWOBJ
        Object* args = pop();
        Object* cls = pop();
        if (cls->kind != Kind::Global || cls->fn != GlobalFn::OrderedDict || args->kind != Kind::Tuple ||
            !args->items.empty())
          throw Error("pickle: NEWOBJ of " + (cls->kind == Kind::Global ? cls->s : std::string(kind_name(cls->kind))) +
                      " refused");
        Object* d = make(Kind::Dict);
        d->ordered = true;
        push(d);
        break;
      }
      case 'b': {  // BUILD
        Object* state = pop();
        Object* target = top();
        // An OrderedDict state dict carries its `_metadata` attribute this way; attributes are
        // not needed and are dropped.
        if (target->kind == Kind::Dict &&
            (state->kind == Kind::Dict || state->kind == Kind::None || state->kind == Kind::Tuple))
          break;
        throw Error(std::string("pickle: BUILD on a ") + kind_name(target->kind) + " refused");
      }
      case 'Q': {  // BINPERSID
        Object* pid = pop();
        push(persistent_load(pid));
        break;
      }
      default:
        throw Error("pickle: unsupported opcode " + hex_op(op) + " (" + opcode_name(op) + ") at byte " +
                    std::to_string(at) + ": only PyTorch state dicts can be read");
    }
  }
}

}  // namespace gpen::conv::pickle
