#pragma once
// Internal to the unpickler (converter/pickle.cpp, converter/pickle_load.cpp): the dict insert
// and the global whitelist that the opcode loop shares with the REDUCE / persistent-id calls.
#include <string>

#include "converter/pickle.h"

namespace gpen::conv::pickle {

// Inserts or, for a string key already present, replaces (Python dict semantics, insertion order).
void dict_set(Object* d, Object* k, Object* v);
// Resolves `module.name` against the whitelist into `g` (a Kind::Global), or throws.
Object* resolve_global(Object* g, const std::string& module, const std::string& name);

}  // namespace gpen::conv::pickle
