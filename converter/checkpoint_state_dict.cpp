// Finding the state dict inside an unpickled checkpoint: an explicit --key path, or a search
// that prefers the keys training code nests its weights under.
#include <string>

#include "converter/checkpoint_internal.h"

namespace gpen::conv {

namespace {

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

}  // namespace

std::string printable(const std::string& s) {
  std::string r = s.size() > 100 ? s.substr(0, 100) + "..." : s;
  for (char& c : r)
    if (static_cast<unsigned char>(c) < 32 || c == 127) c = '?';
  return r;
}

namespace {

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

}  // namespace

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

}  // namespace gpen::conv
